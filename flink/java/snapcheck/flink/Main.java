package snapcheck.flink;

import java.io.File;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Runs one job of {@link Jobs} in a local MiniCluster with the checkpointing mode, failures and
 * Flink configuration of the command line; {@link Driver} ends the run and writes {@code run.json}
 * next to the per-subtask trace files.
 *
 * <pre>
 * java -cp snapcheck-flink.jar:FLINK_LIB/* snapcheck.flink.Main --job keyed-agg --mode aligned
 *      --parallelism 2 --records 1000 --rate 1000 --interval 100 --fail agg:0:300 --seed 1 --out DIR
 * </pre>
 */
public final class Main {
    private Main() {}

    public static void main(String[] argv) throws Exception {
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

        Configuration conf = new Configuration();
        conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(interval));
        switch (mode) {
            case "aligned":
                conf.set(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE, CheckpointingMode.EXACTLY_ONCE);
                conf.set(CheckpointingOptions.ENABLE_UNALIGNED, false);
                break;
            case "unaligned":
                conf.set(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE, CheckpointingMode.EXACTLY_ONCE);
                conf.set(CheckpointingOptions.ENABLE_UNALIGNED, true);
                conf.set(CheckpointingOptions.ALIGNED_CHECKPOINT_TIMEOUT, Duration.ZERO);
                break;
            case "timeout":
                conf.set(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE, CheckpointingMode.EXACTLY_ONCE);
                conf.set(CheckpointingOptions.ENABLE_UNALIGNED, true);
                conf.set(CheckpointingOptions.ALIGNED_CHECKPOINT_TIMEOUT, Duration.ofMillis(alignedTimeout));
                break;
            case "at-least-once":
                conf.set(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE, CheckpointingMode.AT_LEAST_ONCE);
                break;
            default:
                throw new IllegalArgumentException("unknown mode '" + mode + "' (aligned, unaligned, timeout, at-least-once)");
        }
        conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, new File(out, "checkpoints").toURI().toString());
        conf.set(ExecutionOptions.BUFFER_TIMEOUT, Duration.ofMillis(bufferTimeout));
        Map<String, String> restart = new LinkedHashMap<>();
        restart.put("restart-strategy.type", "fixed-delay");
        restart.put("restart-strategy.fixed-delay.attempts", String.valueOf(fails.size() + 3));
        restart.put("restart-strategy.fixed-delay.delay", restartDelay + " ms");
        conf.addAll(Configuration.fromMap(restart));
        conf.addAll(Configuration.fromMap(extra));

        File dir = new File(out);
        if (!dir.isDirectory() && !dir.mkdirs()) {
            throw new IOException("cannot create " + out);
        }
        TraceLog.t0 = System.nanoTime();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(p, conf);
        TracedJob job = new TracedJob(env, out, new Faults(fails), work);
        Jobs.build(jobName, job, p, records, rate, seed);
        Map<String, Object> info = new LinkedHashMap<>();
        info.put("parallelism", p);
        info.put("records", records);
        info.put("rate", rate);
        info.put("seed", seed);
        Driver.run(job, jobName, Duration.ofSeconds(timeout), Duration.ofMillis(quiet), info);
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    private static String req(Map<String, String> opt, String key) {
        String v = opt.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing --" + key);
        }
        return v;
    }
}
