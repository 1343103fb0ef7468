package snapcheck.flink;

import java.io.File;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Runs one job of {@link Jobs} in a local MiniCluster with the checkpointing mode, failures and
 * Flink configuration of the command line; {@link Driver} ends the run; {@code run.json} goes
 * next to the per-subtask trace files.
 *
 * <pre>
 * java -cp snapcheck-flink.jar:FLINK_LIB/* snapcheck.flink.Main --job keyed-agg --mode aligned
 *      --parallelism 2 --records 1000 --rate 1000 --interval 100 --fail agg:0:300 --seed 1 --out DIR
 *      [--rescale savepoint:3@800 | --rescale failure:1]
 * </pre>
 *
 * <p>With {@code --rescale KIND:P[@MS]} the run has two job generations in this JVM (one event
 * counter, so the merged order stays exact). Generation 0 runs at {@code --parallelism} with
 * retained checkpoints; {@code savepoint} stops it with a savepoint MS ms after the first source
 * record (default: half the time the sources need), {@code failure} gives it no restarts, so the
 * first injected failure fails it for good and its latest retained checkpoint is the one to
 * restore. Generation 1 is the same job at parallelism P restored from that savepoint or
 * checkpoint; it runs until quiescent like any run. {@link Rescale} writes, into {@code run.json},
 * how Flink redistributes the in-flight state of each exchange between the two parallelisms.
 */
public final class Main {
    private Main() {}

    public static void main(String[] argv) {
        try {
            run(argv);
        } catch (Throwable e) {
            // Flink's threads are not daemons: without the halt a failed start would hang the JVM.
            e.printStackTrace();
            System.err.flush();
            Runtime.getRuntime().halt(1);
        }
    }

    private static void run(String[] argv) throws Exception {
        Map<String, String> opt = new LinkedHashMap<>();
        List<String> fails = new ArrayList<>();
        Map<String, Long> work = new LinkedHashMap<>();
        Map<String, String> extra = new LinkedHashMap<>();
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (!a.startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("expected --option value, got '" + a + "'");
            }
            String v = argv[++i];
            switch (a) {
                case "--fail":
                    fails.add(v);
                    break;
                case "--work": {
                    String[] kv = v.split("=", 2);
                    work.put(kv[0], Long.parseLong(kv[1]));
                    break;
                }
                case "--conf": {
                    String[] kv = v.split("=", 2);
                    extra.put(kv[0], kv[1]);
                    break;
                }
                default:
                    opt.put(a.substring(2), v);
            }
        }
        String jobName = req(opt, "job");
        String mode = req(opt, "mode");
        String out = req(opt, "out");
        int p = Integer.parseInt(opt.getOrDefault("parallelism", "2"));
        long records = Long.parseLong(opt.getOrDefault("records", "1000"));
        double rate = Double.parseDouble(opt.getOrDefault("rate", "1000"));
        long interval = Long.parseLong(opt.getOrDefault("interval", "100"));
        long seed = Long.parseLong(opt.getOrDefault("seed", "0"));
        long timeout = Long.parseLong(opt.getOrDefault("timeout", "120"));
        long quiet = Long.parseLong(opt.getOrDefault("quiet", "500"));
        long bufferTimeout = Long.parseLong(opt.getOrDefault("buffer-timeout", "100"));
        long restartDelay = Long.parseLong(opt.getOrDefault("restart-delay", "100"));
        long alignedTimeout = Long.parseLong(opt.getOrDefault("aligned-timeout", "10"));
        String rescale = opt.get("rescale");
        String kind = null;
        int p2 = p;
        long stopAt = rate > 0 ? (long) (500 * records / rate) : 500;
        if (rescale != null) {
            String[] kp = rescale.split(":", 2);
            kind = kp[0];
            String[] pa = kp[1].split("@", 2);
            p2 = Integer.parseInt(pa[0]);
            if (pa.length > 1) {
                stopAt = Long.parseLong(pa[1]);
            }
            if (!kind.equals("savepoint") && !kind.equals("failure")) {
                throw new IllegalArgumentException("--rescale KIND:P[@MS] with KIND savepoint or failure, got " + rescale);
            }
        }

        File dir = new File(out);
        if (!dir.isDirectory() && !dir.mkdirs()) {
            throw new IOException("cannot create " + out);
        }
        TraceLog.t0 = System.nanoTime();
        Faults faults = new Faults(fails);
        Map<String, Object> info = new LinkedHashMap<>();
        info.put("parallelism", p);
        info.put("records", records);
        info.put("rate", rate);
        info.put("seed", seed);
        String ckptDir = new File(out, "checkpoints").getAbsolutePath();
        Duration quietD = Duration.ofMillis(quiet);

        Configuration conf = configure(mode, interval, alignedTimeout, ckptDir, bufferTimeout);
        Compat.restarts(conf, "failure".equals(kind) ? 0 : fails.size() + 3, Duration.ofMillis(restartDelay));
        if (kind != null) {
            Compat.retainCheckpoints(conf);
        }
        conf.addAll(Configuration.fromMap(extra));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(p, conf);
        TracedJob job = new TracedJob(env, out, faults, work, 0);
        Jobs.build(jobName, job, p, records, rate, seed);
        List<Driver.Phase> phases = new ArrayList<>();
        Driver.Stop stop = kind == null ? null
                : new Driver.Stop(kind, stopAt, kind.equals("savepoint") ? new File(out, "savepoints").getAbsolutePath() : ckptDir);
        phases.add(Driver.run(job, jobName, Duration.ofSeconds(timeout), quietD, stop));
        String rescaleJson = null;
        Driver.Phase first = phases.get(0);
        if (kind != null) {
            String expected = kind.equals("savepoint") ? "stopped" : "failed";
            String skipped = !first.status.equals(expected)
                    ? "generation 0 ended " + first.status + ", not " + expected
                    : first.restorePath == null ? "no retained checkpoint to restore" : null;
            if (skipped == null) {
                String restored = restoredState(first.restorePath, job);
                Registry.nextGeneration();
                Configuration conf1 = configure(mode, interval, alignedTimeout, ckptDir, bufferTimeout);
                Compat.restarts(conf1, fails.size() + 3, Duration.ofMillis(restartDelay));
                conf1.addAll(Configuration.fromMap(extra));
                Compat.restoreFrom(conf1, first.restorePath);
                StreamExecutionEnvironment env1 = StreamExecutionEnvironment.createLocalEnvironment(p2, conf1);
                TracedJob job1 = new TracedJob(env1, out, faults, work, 1);
                Jobs.build(jobName, job1, p2, records, rate, seed);
                phases.add(Driver.run(job1, jobName, Duration.ofSeconds(timeout), quietD, null));
                rescaleJson = Rescale.json(kind, job, job1, null, restored);
            } else {
                rescaleJson = Rescale.json(kind, job, null, skipped, null);
            }
        }
        Driver.writeRunJson(job, jobName, phases, info, rescaleJson);
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    private static Configuration configure(String mode, long interval, long alignedTimeout, String ckptDir,
                                           long bufferTimeout) {
        Configuration conf = new Configuration();
        Duration iv = Duration.ofMillis(interval);
        String uri = new File(ckptDir).toURI().toString();
        switch (mode) {
            case "aligned":
                Compat.checkpointing(conf, iv, true, false, Duration.ZERO, uri);
                break;
            case "unaligned":
                Compat.checkpointing(conf, iv, true, true, Duration.ZERO, uri);
                break;
            case "timeout":
                Compat.checkpointing(conf, iv, true, true, Duration.ofMillis(alignedTimeout), uri);
                break;
            case "at-least-once":
                Compat.checkpointing(conf, iv, false, false, Duration.ZERO, uri);
                break;
            default:
                throw new IllegalArgumentException("unknown mode '" + mode + "' (aligned, unaligned, timeout, at-least-once)");
        }
        conf.set(ExecutionOptions.BUFFER_TIMEOUT, Duration.ofMillis(bufferTimeout));
        return conf;
    }

    /** What the checkpoint to restore holds per operator ({@link CheckpointState}), or why it could not be read. */
    private static String restoredState(String path, TracedJob job) {
        try {
            return CheckpointState.json(path, job);
        } catch (Exception e) {
            return "{\"path\":" + Json.str(path) + ",\"error\":" + Json.str(String.valueOf(e)) + "}";
        }
    }

    private static String req(Map<String, String> opt, String key) {
        String v = opt.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing --" + key);
        }
        return v;
    }
}
