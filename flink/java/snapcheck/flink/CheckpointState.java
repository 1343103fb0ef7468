package snapcheck.flink;

import java.io.DataInputStream;
import java.io.File;
import java.io.FileInputStream;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.InputChannelStateHandle;
import org.apache.flink.runtime.state.StateObject;

/**
 * What a completed checkpoint or savepoint holds, read from its {@code _metadata} with Flink's own
 * loader ({@link Checkpoints#loadCheckpointMetadata}): for every operator (named by its uid, matched
 * through the uid hash Flink derives operator ids from) and every subtask that holds anything, the
 * bytes of managed and raw keyed state, managed and raw operator state, and of the two parts of
 * unaligned channel state: the <em>input</em> part (records in the subtask's input buffers) and the
 * <em>output</em> part (records in its result subpartitions), with their numbers of handles. For
 * the traced operators, the channel-state handles are also counted per exchange: {@code
 * input_from} by the upstream operator of the input gate (gate {@code g} is the operator's
 * {@code g}-th input; a handle that names no gate, as Flink 2.x's merged handles, counts for the
 * only input or as {@code "?"}), {@code output_to} by the
 * downstream operator (a traced operator has one traced output). Flink writes a handle for every
 * subpartition that held a buffer at the barrier, even an empty one, and its state assignment
 * counts a subtask with any handle as one with state. This is the state Flink's {@code
 * StateAssignmentOperation} redistributes on a rescale; an operator listed without subtasks has
 * no state of its own.
 */
final class CheckpointState {
    private CheckpointState() {}

    /**
     * JSON: {@code {"path":..., "checkpoint_id":..., "operators":{uid:{"parallelism":p,"subtasks":{i:{...}}}}}},
     * operators named by the uids of {@link TracedJob#uids} (an operator of another uid by its id).
     */
    static String json(String path, TracedJob job) throws Exception {
        File dir = new File(path);
        File meta = dir.isDirectory() ? new File(dir, "_metadata") : dir;
        Map<OperatorID, String> names = new LinkedHashMap<>();
        for (String uid : job.uids()) {
            names.put(Compat.operatorIdOfUid(uid), uid);
        }
        CheckpointMetadata md;
        try (DataInputStream in = new DataInputStream(new FileInputStream(meta))) {
            md = Checkpoints.loadCheckpointMetadata(in, CheckpointState.class.getClassLoader(), dir.getAbsolutePath());
        }
        Map<String, String> ops = new TreeMap<>();
        for (OperatorState os : md.getOperatorStates()) {
            String name = names.getOrDefault(os.getOperatorID(), os.getOperatorID().toHexString());
            TracedCore<?> core = job.ops.get(name);
            StringBuilder subs = new StringBuilder("{");
            for (Map.Entry<Integer, OperatorSubtaskState> e : new TreeMap<>(os.getSubtaskStates()).entrySet()) {
                OperatorSubtaskState s = e.getValue();
                if (!s.hasState()) {
                    continue;
                }
                subs.append(subs.length() > 1 ? "," : "").append('"').append(e.getKey()).append("\":{")
                        .append("\"keyed_bytes\":").append(bytes(s.getManagedKeyedState()) + bytes(s.getRawKeyedState()))
                        .append(",\"operator_bytes\":").append(bytes(s.getManagedOperatorState()) + bytes(s.getRawOperatorState()))
                        .append(",\"input_bytes\":").append(bytes(s.getInputChannelState()))
                        .append(",\"input_handles\":").append(s.getInputChannelState().size())
                        .append(",\"output_bytes\":").append(bytes(s.getResultSubpartitionState()))
                        .append(",\"output_handles\":").append(s.getResultSubpartitionState().size());
                if (core != null) {
                    subs.append(",\"input_from\":").append(byGate(s.getInputChannelState(), core.inputs))
                            .append(",\"output_to\":{");
                    if (core.out != null && !s.getResultSubpartitionState().isEmpty()) {
                        subs.append(Json.str(core.out.to)).append(':').append(s.getResultSubpartitionState().size());
                    }
                    subs.append('}');
                }
                subs.append('}');
            }
            ops.put(name, "{\"parallelism\":" + os.getParallelism() + ",\"subtasks\":" + subs + "}}");
        }
        StringBuilder b = new StringBuilder("{\"path\":").append(Json.str(dir.getAbsolutePath()))
                .append(",\"checkpoint_id\":").append(md.getCheckpointId()).append(",\"operators\":{");
        boolean first = true;
        for (Map.Entry<String, String> e : ops.entrySet()) {
            b.append(first ? "" : ",").append(Json.str(e.getKey())).append(':').append(e.getValue());
            first = false;
        }
        return b.append("}}").toString();
    }

    /** Input-channel handles per upstream operator of their gate. */
    private static String byGate(Collection<? extends StateObject> handles, List<String> inputs) {
        Map<String, Integer> n = new TreeMap<>();
        for (StateObject h : handles) {
            String from = inputs.size() == 1 ? inputs.get(0) : "?";
            if (h instanceof InputChannelStateHandle) {
                int gate = ((InputChannelStateHandle) h).getInfo().getGateIdx();
                from = gate < inputs.size() ? inputs.get(gate) : "?";
            }
            n.merge(from, 1, Integer::sum);
        }
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, Integer> e : n.entrySet()) {
            b.append(b.length() > 1 ? "," : "").append(Json.str(e.getKey())).append(':').append(e.getValue());
        }
        return b.append('}').toString();
    }

    private static long bytes(Collection<? extends StateObject> handles) {
        long n = 0;
        for (StateObject h : handles) {
            n += h.getStateSize();
        }
        return n;
    }
}
