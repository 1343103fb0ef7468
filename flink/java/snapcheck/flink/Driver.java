package snapcheck.flink;

import java.io.File;
import java.io.FileOutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.streaming.api.environment.CheckpointConfig;

/**
 * Runs a traced job in its (local) environment; {@link #writeRunJson} writes {@code run.json} next
 * to the trace files. A run ends when every {@link GeneratorSource} reader has read all its
 * records, no record was sent or processed for {@code quiet} and a checkpoint completed after
 * that (status {@code completed}), when the job ends by itself ({@code finished}) or fails for
 * good ({@code failed}), or after {@code timeout} ({@code timeout}: a hang is a finding too). A job
 * without generator sources ends after {@code quiet} without records once a checkpoint completed.
 *
 * <p>A {@link Stop} ends the first generation of a rescaled run early: {@code savepoint} stops the
 * job with a savepoint {@code atMillis} after the first source record was read (status
 * {@code stopped}, {@link Phase#restorePath} the savepoint); {@code failure} waits for the job to
 * fail for good (its restart strategy is none) and takes the latest retained checkpoint (status
 * {@code failed}, {@link Phase#restorePath} that checkpoint).
 */
final class Driver {
    private Driver() {}

    /** How the first generation of a rescaled run ends. */
    static final class Stop {
        final String kind;
        final long atMillis;
        final String dir;

        Stop(String kind, long atMillis, String dir) {
            this.kind = kind;
            this.atMillis = atMillis;
            this.dir = dir;
        }
    }

    /** The outcome of running one job generation. */
    static final class Phase {
        final int gen;
        final int parallelism;
        String status;
        String error;
        long endedUs;
        String restorePath;
        String topology;

        Phase(int gen, int parallelism) {
            this.gen = gen;
            this.parallelism = parallelism;
        }
    }

    static Phase run(TracedJob job, String name, Duration timeout, Duration quiet, Stop stop) throws Exception {
        int readers = 0;
        int par = 0;
        for (TracedCore<?> c : job.ops.values()) {
            par = Math.max(par, job.parallelism.get(c.op));
            if (c.inputs.contains("@input")) {
                readers += job.parallelism.get(c.op);
            }
        }
        Phase phase = new Phase(job.gen, par);
        phase.topology = job.topologyJson();
        JobClient client = job.env.executeAsync(name);
        long deadline = System.nanoTime() + timeout.toNanos();
        long doneSince = 0;
        String status;
        while (true) {
            JobStatus st;
            try {
                st = client.getJobStatus().get();
            } catch (Exception e) {
                // The per-job MiniCluster shuts down as soon as the job is terminal (e.g. failed for good).
                st = JobStatus.FAILED;
                try {
                    client.getJobExecutionResult().get();
                    st = JobStatus.FINISHED;
                } catch (Exception failed) {
                    // failed: the result says why (below)
                }
            }
            if (st.isGloballyTerminalState()) {
                status = st == JobStatus.FINISHED ? "finished" : "failed";
                try {
                    client.getJobExecutionResult().get();
                } catch (Exception e) {
                    phase.error = stack(e);
                }
                break;
            }
            long now = System.nanoTime();
            if (stop != null && stop.kind.equals("savepoint") && Registry.firstRead != 0
                    && (now - Registry.firstRead) / 1_000_000 >= stop.atMillis && st == JobStatus.RUNNING) {
                try {
                    phase.restorePath = client.stopWithSavepoint(false, stop.dir, SavepointFormatType.CANONICAL).get();
                    client.getJobExecutionResult().get();
                    status = "stopped";
                    break;
                } catch (Exception e) {
                    phase.error = stack(e);   // e.g. not all tasks running (a failover): try again
                }
            }
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
        phase.endedUs = (System.nanoTime() - TraceLog.t0) / 1000;
        if (!status.equals("finished") && !status.equals("failed") && !status.equals("stopped")) {
            // The per-job MiniCluster shuts down once the job is terminal: wait on the result, not the status.
            client.cancel().get();
            try {
                client.getJobExecutionResult().get();
            } catch (Exception expected) {
                // cancelled
            }
        }
        if (status.equals("failed") && stop != null && stop.kind.equals("failure")) {
            phase.restorePath = latestCheckpoint(new File(stop.dir, client.getJobID().toString()));
        }
        phase.status = status;
        return phase;
    }

    /** The retained checkpoint with the highest id under {@code jobDir} ({@code chk-N/_metadata}), or null. */
    static String latestCheckpoint(File jobDir) {
        File[] dirs = jobDir.listFiles((d, n) -> n.startsWith("chk-") && new File(d, n + "/_metadata").isFile());
        if (dirs == null || dirs.length == 0) {
            return null;
        }
        File best = null;
        for (File f : dirs) {
            if (best == null || Long.parseLong(f.getName().substring(4)) > Long.parseLong(best.getName().substring(4))) {
                best = f;
            }
        }
        return best.getAbsolutePath();
    }

    /** The checkpointing mode as snapcheck names it. */
    static String mode(CheckpointConfig cc) {
        if (Compat.atLeastOnce(cc)) {
            return "at-least-once";
        }
        if (!cc.isUnalignedCheckpointsEnabled()) {
            return "aligned";
        }
        return cc.getAlignedCheckpointTimeout().isZero() ? "unaligned" : "timeout";
    }

    /**
     * {@code run.json}: the run's settings ({@code info}), faults and which fired, the Flink
     * version and configuration, the first generation's status and topology, and with a rescale
     * every generation ({@code generations}) and the channel-state mappings ({@code rescale}).
     */
    static void writeRunJson(TracedJob job, String name, List<Phase> phases, Map<String, Object> info,
                             String rescale) throws Exception {
        CheckpointConfig cc = job.env.getCheckpointConfig();
        Phase last = phases.get(phases.size() - 1);
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
        StringBuilder gens = new StringBuilder("[");
        for (Phase ph : phases) {
            gens.append(gens.length() > 1 ? "," : "").append("{\"gen\":").append(ph.gen)
                    .append(",\"parallelism\":").append(ph.parallelism)
                    .append(",\"status\":").append(Json.str(ph.status))
                    .append(",\"error\":").append(Json.str(ph.error))
                    .append(",\"ended_us\":").append(ph.endedUs)
                    .append(",\"restore_path\":").append(Json.str(ph.restorePath))
                    .append(",\"topology\":").append(ph.topology).append('}');
        }
        b.append(",\"faults\":").append(faults).append(']')
                .append(",\"fired\":").append(fired).append('}')
                .append(",\"status\":").append(Json.str(last.status))
                .append(",\"error\":").append(Json.str(last.error))
                .append(",\"ended_us\":").append(last.endedUs)
                .append(",\"flink_version\":").append(Json.str(EnvironmentInformation.getVersion()))
                .append(",\"adapter_line\":").append(Json.str(Compat.LINE))
                .append(",\"config\":").append(conf).append('}')
                .append(",\"topology\":").append(phases.get(0).topology)
                .append(",\"generations\":").append(gens).append(']');
        if (rescale != null) {
            b.append(",\"rescale\":").append(rescale);
        }
        b.append("}\n");
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
