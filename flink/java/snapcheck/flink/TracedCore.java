package snapcheck.flink;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.util.Collector;

/**
 * What every traced wrapper does, per subtask attempt (a receive is the <em>processing</em>
 * of a record: docs/theory.md, "Receive means processing"):
 *
 * <ul>
 *   <li>{@code initializeState}: open the trace file (its header names the job generation, the
 *       subtask, and for a keyed operator the key-group range Flink's
 *       {@code KeyGroupRangeAssignment} gives it); on a restored or restarted attempt log
 *       {@code restore} with the checkpoint id Flink reports ({@code getRestoredCheckpointId}, 0 =
 *       started from scratch) and what this wrapper's operator list state gave back: one entry
 *       per <em>state partition</em> {@code [gen, subtask, checkpoint id]} (a partition is named
 *       after the subtask that created it; after a rescale Flink redistributes the entries round
 *       robin, so the entries say which old subtask's state this subtask took). An operator
 *       declared stateless keeps no state at all (no entries);
 *   <li>a source reader's split assignment: {@code splits} with {@code [split, offset]} pairs;
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
    final int gen;
    final List<String> inputs = new ArrayList<>();
    OutSpec<OUT> out;
    /** A keyed operator: its header names its key-group range. */
    boolean keyed;
    /** False: the wrapper registers no operator state (an operator without state of its own). */
    boolean keepsState = true;

    private transient TraceLog log;
    private transient int subtask;
    private transient int attempt;
    private transient long processed;
    private transient long sent;
    private transient List<Faults.Spec> myFaults;
    private transient ListState<Tuple3<Integer, Integer, Long>> partState;
    private transient List<int[]> parts;

    TracedCore(String op, String role, String dir, Faults faults, long workMicros, int gen) {
        this.gen = gen;
        this.op = op;
        this.role = role;
        this.dir = dir;
        this.faults = faults;
        this.workMicros = workMicros;
    }

    void initialize(RuntimeContext rc, FunctionInitializationContext ctx) throws Exception {
        subtask = Compat.subtask(rc);
        attempt = Compat.attempt(rc);
        int parallelism = Compat.parallelism(rc);
        StringBuilder ins = new StringBuilder("[");
        for (int i = 0; i < inputs.size(); i++) {
            ins.append(i > 0 ? "," : "").append(Json.str(inputs.get(i)));
        }
        ins.append(']');
        String kg = "";
        if (keyed) {
            KeyGroupRange r = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(
                    TracedJob.MAX_PARALLELISM, parallelism, subtask);
            kg = ",\"key_groups\":[" + r.getStartKeyGroup() + "," + r.getEndKeyGroup() + "],\"max_parallelism\":"
                    + TracedJob.MAX_PARALLELISM;
        }
        String header = "{\"op\":" + Json.str(op) + ",\"gen\":" + gen + ",\"subtask\":" + subtask
                + ",\"parallelism\":" + parallelism + ",\"attempt\":" + attempt + ",\"role\":" + Json.str(role)
                + ",\"inputs\":" + ins + ",\"out\":" + (out == null ? "null" : out.json()) + kg
                + ",\"keeps_state\":" + keepsState + "}";
        log = new TraceLog(dir, gen, op, subtask, attempt, header);
        Registry.core(gen, op, subtask, this);
        parts = new ArrayList<>();
        StringBuilder restored = new StringBuilder();
        if (keepsState) {
            partState = ctx.getOperatorStateStore().getListState(new ListStateDescriptor<>(
                    "snapcheck.partitions", Types.TUPLE(Types.INT, Types.INT, Types.LONG)));
            for (Tuple3<Integer, Integer, Long> t : partState.get()) {
                parts.add(new int[] {t.f0, t.f1});
                restored.append(restored.length() > 0 ? "," : "").append('[').append(t.f0).append(',')
                        .append(t.f1).append(',').append(t.f2).append(']');
            }
            if (!ctx.isRestored()) {
                parts.clear();
                parts.add(new int[] {gen, subtask});
            }
        }
        if (ctx.isRestored() || attempt > 0) {
            long id = ctx.isRestored() ? ctx.getRestoredCheckpointId().orElse(-1) : 0;
            log.event("restore", ",\"id\":" + id + (keepsState ? ",\"parts\":[" + restored + "]" : ""));
        }
        myFaults = faults == null ? Collections.emptyList() : faults.forSubtask(op, subtask);
    }

    /** A source reader of this subtask was given these splits ({@code [split, offset]} pairs). */
    void splits(List<long[]> splits) {
        StringBuilder b = new StringBuilder();
        for (long[] s : splits) {
            b.append(b.length() > 0 ? "," : "").append('[').append(s[0]).append(',').append(s[1]).append(']');
        }
        log.event("splits", ",\"splits\":[" + b + "]");
    }

    void snapshot(long checkpointId) throws Exception {
        if (keepsState) {
            List<Tuple3<Integer, Integer, Long>> entries = new ArrayList<>();
            for (int[] p : parts) {
                entries.add(Tuple3.of(p[0], p[1], checkpointId));
            }
            partState.update(entries);
        }
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
        log.event("recv", ",\"from\":" + Json.str(e.op) + ",\"src\":" + e.src + ",\"att\":" + e.att + ",\"n\":" + e.n
                + (e.gen != 0 ? ",\"gen\":" + e.gen : ""));
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
        log.event("send", ",\"n\":" + n + (to >= 0 ? ",\"to\":" + to : "")
                + (key != null ? ",\"key\":" + Json.value(key) + ",\"kg\":" + out.keyGroup(key) : ""));
        TraceLog.touch();
        down.collect(new Envelope<>(gen, op, subtask, attempt, n, value));
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
