package snapcheck.flink;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

import org.apache.flink.api.common.TaskInfo;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.util.Collector;

/**
 * What every traced wrapper does, per subtask attempt (a receive is the <em>processing</em>
 * of a record: docs/theory.md, "Receive means processing"):
 *
 * <ul>
 *   <li>{@code initializeState}: open the trace file; on a restored or restarted attempt log
 *       {@code restore} with the checkpoint id Flink reports ({@code getRestoredCheckpointId}, 0 =
 *       started from scratch) and the id kept in this wrapper's operator state (a cross-check);
 *   <li>each input record: injected failure if due ({@code fail}, then throw), then {@code recv}
 *       with the record's identity, just before the user function processes it;
 *   <li>each output record: {@code send} with the target subtask as the job's partitioner picks
 *       it, logged before the record is handed to Flink;
 *   <li>{@code snapshotState}: {@code ckpt} with the checkpoint id (the operator's snapshot is
 *       taken synchronously in the task thread, between two records);
 *   <li>{@code notifyCheckpointComplete} / {@code notifyCheckpointAborted}: {@code notify} /
 *       {@code abort}.
 * </ul>
 */
final class TracedCore<OUT> implements Serializable {
    private static final long serialVersionUID = 1L;

    final String op;
    final String role;
    final String dir;
    final Faults faults;
    final long workMicros;
    final List<String> inputs = new ArrayList<>();
    OutSpec<OUT> out;

    private transient TraceLog log;
    private transient int subtask;
    private transient int attempt;
    private transient long processed;
    private transient long sent;
    private transient List<Faults.Spec> myFaults;
    private transient ListState<Long> ckptState;

    TracedCore(String op, String role, String dir, Faults faults, long workMicros) {
        this.op = op;
        this.role = role;
        this.dir = dir;
        this.faults = faults;
        this.workMicros = workMicros;
    }

    void initialize(RuntimeContext rc, FunctionInitializationContext ctx) throws Exception {
        TaskInfo ti = rc.getTaskInfo();
        subtask = ti.getIndexOfThisSubtask();
        attempt = ti.getAttemptNumber();
        StringBuilder ins = new StringBuilder("[");
        for (int i = 0; i < inputs.size(); i++) {
            ins.append(i > 0 ? "," : "").append(Json.str(inputs.get(i)));
        }
        ins.append(']');
        String header = "{\"op\":" + Json.str(op) + ",\"subtask\":" + subtask + ",\"parallelism\":"
                + ti.getNumberOfParallelSubtasks() + ",\"attempt\":" + attempt + ",\"role\":" + Json.str(role)
                + ",\"inputs\":" + ins + ",\"out\":" + (out == null ? "null" : out.json()) + "}";
        log = new TraceLog(dir, op, subtask, attempt, header);
        ckptState = ctx.getOperatorStateStore().getListState(
                new ListStateDescriptor<>("snapcheck.checkpoint-id", Types.LONG));
        if (ctx.isRestored() || attempt > 0) {
            long id = ctx.isRestored() ? ctx.getRestoredCheckpointId().orElse(-1) : 0;
            long kept = 0;
            for (Long v : ckptState.get()) {
                kept = v;
            }
            log.event("restore", ",\"id\":" + id + ",\"state\":" + kept);
        }
        myFaults = faults == null ? Collections.emptyList() : faults.forSubtask(op, subtask);
    }

    void snapshot(long checkpointId) throws Exception {
        ckptState.update(Collections.singletonList(checkpointId));
        log.event("ckpt", ",\"id\":" + checkpointId);
    }

    void notifyComplete(long checkpointId) {
        log.event("notify", ",\"id\":" + checkpointId);
        Registry.completed();
    }

    void notifyAborted(long checkpointId) {
        log.event("abort", ",\"id\":" + checkpointId);
    }

    /** Call just before the user function processes {@code e}. */
    void beforeRecord(Envelope<?> e) {
        injectFailure();
        log.event("recv", ",\"from\":" + Json.str(e.op) + ",\"src\":" + e.src + ",\"att\":" + e.att + ",\"n\":" + e.n);
        TraceLog.touch();
        processed++;
        if (workMicros > 0) {
            LockSupport.parkNanos(workMicros * 1000);
        }
    }

    /** Call before processing a record that carries no identity (from an untraced source). */
    void beforeUntracedRecord() {
        injectFailure();
        TraceLog.touch();
        processed++;
    }

    private void injectFailure() {
        Faults.Spec f = Faults.due(myFaults, processed);
        if (f != null) {
            String reason = "injected failure " + f.text + " before record " + (processed + 1) + " of attempt " + attempt;
            log.event("fail", ",\"reason\":" + Json.str(reason));
            throw new Faults.InjectedFailure(reason);
        }
    }

    void send(OUT value, Collector<Envelope<OUT>> down) throws Exception {
        if (out == null) {
            throw new IllegalStateException("traced operator '" + op + "' has no traced downstream but emitted " + value);
        }
        long n = sent++;
        Object key = out.keyOf(value);
        int to = out.target(key, subtask);
        log.event("send", ",\"n\":" + n + (to >= 0 ? ",\"to\":" + to : "") + (key != null ? ",\"key\":" + Json.value(key) : ""));
        TraceLog.touch();
        down.collect(new Envelope<>(op, subtask, attempt, n, value));
    }

    void close() {
        if (log != null) {
            log.event("close", "");
            log.close();
            log = null;
        }
    }

    /** A collector for the user function: every record it emits is traced and wrapped. */
    static final class Sender<OUT> implements Collector<OUT> {
        private final TracedCore<OUT> core;
        Collector<Envelope<OUT>> down;

        Sender(TracedCore<OUT> core) {
            this.core = core;
        }

        @Override
        public void collect(OUT record) {
            try {
                core.send(record, down);
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }

        @Override
        public void close() {}
    }
}
