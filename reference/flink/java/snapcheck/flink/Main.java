package snapcheck.flink;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Runs one traced job in a local MiniCluster and writes {@code run.json} next to the per-subtask
 * trace files. The run ends when every source reader has read all its records, no record was
 * sent or processed for {@code --quiet} ms and a checkpoint completed after that (status
 * {@code completed}), when the job fails for good ({@code failed}), or after {@code --timeout}
 * seconds ({@code timeout}: a hang is a finding too).
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
        Faults faults = new Faults(fails);
        TracedJob job = new TracedJob(env, out, faults, work);
        Jobs.build(jobName, job, p, records, rate, seed);
        int readers = 0;
        for (TracedCore<?> c : job.ops.values()) {
            if (c.role.equals("source")) {
                readers += job.parallelism.get(c.op);
            }
        }

        String status;
        String error = null;
        JobClient client = env.executeAsync("snapcheck " + jobName + " " + mode);
        long deadline = System.nanoTime() + timeout * 1_000_000_000L;
        long doneSince = 0;
        while (true) {
            JobStatus st = client.getJobStatus().get();
            if (st.isGloballyTerminalState()) {
                status = st == JobStatus.FINISHED ? "finished" : "failed";
                try {
                    client.getJobExecutionResult().get();
                } catch (Exception e) {
                    error = stack(e);
                }
                break;
            }
            long now = System.nanoTime();
            if (Registry.allDone(readers)) {
                if (doneSince == 0) {
                    doneSince = now;
                }
                if (now - TraceLog.lastData > quiet * 1_000_000L && Registry.lastCompletion > doneSince) {
                    status = "completed";
                    break;
                }
            } else {
                doneSince = 0;
            }
            if (now > deadline) {
                status = "timeout";
                break;
            }
            Thread.sleep(20);
        }
        long endedUs = (System.nanoTime() - TraceLog.t0) / 1000;
        if (!status.equals("finished") && !status.equals("failed")) {
            // The per-job MiniCluster shuts down once the job is terminal: wait on the result, not the status.
            client.cancel().get();
            try {
                client.getJobExecutionResult().get();
            } catch (Exception expected) {
                // cancelled
            }
        }

        StringBuilder fired = new StringBuilder("{");
        for (Map.Entry<String, Long> e : Faults.FIRED.entrySet()) {
            fired.append(fired.length() > 1 ? "," : "").append(Json.str(e.getKey())).append(':').append(e.getValue());
        }
        fired.append('}');
        StringBuilder confJson = new StringBuilder("{");
        for (Map.Entry<String, String> e : conf.toMap().entrySet()) {
            confJson.append(confJson.length() > 1 ? "," : "").append(Json.str(e.getKey())).append(':').append(Json.str(e.getValue()));
        }
        confJson.append('}');
        StringBuilder failsJson = new StringBuilder("[");
        for (String f : fails) {
            failsJson.append(failsJson.length() > 1 ? "," : "").append(Json.str(f));
        }
        failsJson.append(']');
        String runJson = "{\"job\":" + Json.str(jobName) + ",\"mode\":" + Json.str(mode) + ",\"parallelism\":" + p
                + ",\"records\":" + records + ",\"rate\":" + rate + ",\"interval_ms\":" + interval + ",\"seed\":" + seed
                + ",\"faults\":" + failsJson + ",\"fired\":" + fired + ",\"status\":" + Json.str(status)
                + ",\"error\":" + Json.str(error) + ",\"ended_us\":" + endedUs
                + ",\"flink_version\":" + Json.str(EnvironmentInformation.getVersion())
                + ",\"config\":" + confJson + ",\"topology\":" + job.topologyJson() + "}\n";
        try (FileOutputStream f = new FileOutputStream(new File(dir, "run.json"))) {
            f.write(runJson.getBytes(StandardCharsets.UTF_8));
        }
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

    private static String stack(Throwable e) {
        StringWriter w = new StringWriter();
        e.printStackTrace(new PrintWriter(w));
        String s = w.toString();
        return s.length() > 4000 ? s.substring(0, 4000) : s;
    }
}
