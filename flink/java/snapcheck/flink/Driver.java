package snapcheck.flink;

import java.io.File;
import java.io.FileOutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.streaming.api.environment.CheckpointConfig;

/**
 * Runs a traced job in its (local) environment and writes {@code run.json} next to the trace
 * files. The run ends when every {@link GeneratorSource} reader has read all its records, no
 * record was sent or processed for {@code quiet} and a checkpoint completed after that (status
 * {@code completed}), when the job ends by itself ({@code finished}) or fails for good
 * ({@code failed}), or after {@code timeout} ({@code timeout}: a hang is a finding too). A job
 * without generator sources ends after {@code quiet} without records once a checkpoint completed.
 */
final class Driver {
    private Driver() {}

    static String run(TracedJob job, String name, Duration timeout, Duration quiet, Map<String, Object> info)
            throws Exception {
        int readers = 0;
        for (TracedCore<?> c : job.ops.values()) {
            if (c.inputs.contains("@input")) {
                readers += job.parallelism.get(c.op);
            }
        }
        String status;
        String error = null;
        JobClient client = job.env.executeAsync(name);
        long deadline = System.nanoTime() + timeout.toNanos();
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
            if (Registry.allDone(readers) && (readers > 0 || TraceLog.lastData > TraceLog.t0)) {
                if (doneSince == 0) {
                    doneSince = now;
                }
                if (now - TraceLog.lastData > quiet.toNanos() && Registry.lastCompletion > doneSince) {
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
        writeRunJson(job, name, status, error, endedUs, info);
        return status;
    }

    /** The checkpointing mode as snapcheck names it. */
    static String mode(CheckpointConfig cc) {
        if (cc.getCheckpointingConsistencyMode() == CheckpointingMode.AT_LEAST_ONCE) {
            return "at-least-once";
        }
        if (!cc.isUnalignedCheckpointsEnabled()) {
            return "aligned";
        }
        return cc.getAlignedCheckpointTimeout().isZero() ? "unaligned" : "timeout";
    }

    private static void writeRunJson(TracedJob job, String name, String status, String error, long endedUs,
                                     Map<String, Object> info) throws Exception {
        CheckpointConfig cc = job.env.getCheckpointConfig();
        StringBuilder b = new StringBuilder("{\"job\":").append(Json.str(name))
                .append(",\"mode\":").append(Json.str(mode(cc)))
                .append(",\"interval_ms\":").append(cc.getCheckpointInterval());
        for (Map.Entry<String, Object> e : info.entrySet()) {
            b.append(',').append(Json.str(e.getKey())).append(':').append(json(e.getValue()));
        }
        StringBuilder fired = new StringBuilder("{");
        for (Map.Entry<String, Long> e : Faults.FIRED.entrySet()) {
            fired.append(fired.length() > 1 ? "," : "").append(Json.str(e.getKey())).append(':').append(e.getValue());
        }
        StringBuilder faults = new StringBuilder("[");
        if (job.faults != null) {
            for (Faults.Spec s : job.faults.all()) {
                faults.append(faults.length() > 1 ? "," : "").append(Json.str(s.text));
            }
        }
        StringBuilder conf = new StringBuilder("{");
        Map<String, String> all = job.env.getConfiguration() instanceof Configuration
                ? ((Configuration) job.env.getConfiguration()).toMap() : Map.of();
        for (Map.Entry<String, String> e : all.entrySet()) {
            conf.append(conf.length() > 1 ? "," : "").append(Json.str(e.getKey())).append(':').append(Json.str(e.getValue()));
        }
        b.append(",\"faults\":").append(faults).append(']')
                .append(",\"fired\":").append(fired).append('}')
                .append(",\"status\":").append(Json.str(status))
                .append(",\"error\":").append(Json.str(error))
                .append(",\"ended_us\":").append(endedUs)
                .append(",\"flink_version\":").append(Json.str(EnvironmentInformation.getVersion()))
                .append(",\"config\":").append(conf).append('}')
                .append(",\"topology\":").append(job.topologyJson()).append("}\n");
        try (FileOutputStream f = new FileOutputStream(new File(job.dir, "run.json"))) {
            f.write(b.toString().getBytes(StandardCharsets.UTF_8));
        }
    }

    private static String json(Object v) {
        if (v instanceof Number || v instanceof Boolean) {
            return v.toString();
        }
        return Json.str(String.valueOf(v));
    }

    private static String stack(Throwable e) {
        StringWriter w = new StringWriter();
        e.printStackTrace(new PrintWriter(w));
        String s = w.toString();
        return s.length() > 4000 ? s.substring(0, 4000) : s;
    }
}
