package snapcheck.flink;

import java.io.Serializable;

import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;

/**
 * How a traced operator's output reaches its (single) downstream traced operator, i.e. which
 * Flink partitioner the job applies, and the target subtask that partitioner picks:
 *
 * <ul>
 *   <li>{@code forward}: {@code ForwardPartitioner}, same subtask index (chained or not);
 *   <li>{@code keyed}: {@code KeyGroupStreamPartitioner}, the subtask owning the key's key group,
 *       {@link KeyGroupRangeAssignment#assignKeyToParallelOperator};
 *   <li>{@code rebalance}: {@code RebalancePartitioner}, round robin from a random start chosen
 *       when the task starts; the sender cannot know the start, so it logs no target and the
 *       merger infers the start from where its records were processed (it must be one and the
 *       same start for all records of one sender attempt, which the merger verifies).
 * </ul>
 */
public final class OutSpec<T> implements Serializable {
    private static final long serialVersionUID = 1L;

    public enum Mode { FORWARD, KEYED, REBALANCE }

    final String to;
    final Mode mode;
    final int parallelism;
    final int maxParallelism;
    final KeySelector<T, ?> key;

    OutSpec(String to, Mode mode, int parallelism, int maxParallelism, KeySelector<T, ?> key) {
        this.to = to;
        this.mode = mode;
        this.parallelism = parallelism;
        this.maxParallelism = maxParallelism;
        this.key = key;
    }

    /** The key of a keyed output (for the trace), else null. */
    Object keyOf(T payload) throws Exception {
        return mode == Mode.KEYED ? key.getKey(payload) : null;
    }

    /** The target subtask, or -1 when only the merger can tell (rebalance). */
    int target(Object keyValue, int mySubtask) {
        switch (mode) {
            case FORWARD:
                return mySubtask;
            case KEYED:
                return KeyGroupRangeAssignment.assignKeyToParallelOperator(keyValue, maxParallelism, parallelism);
            default:
                return -1;
        }
    }

    /** The key group of a key ({@link KeyGroupRangeAssignment#assignToKeyGroup}). */
    int keyGroup(Object keyValue) {
        return KeyGroupRangeAssignment.assignToKeyGroup(keyValue, maxParallelism);
    }

    String json() {
        return "{\"to\":" + Json.str(to) + ",\"mode\":\"" + mode.name().toLowerCase() + "\",\"parallelism\":"
                + parallelism + ",\"max_parallelism\":" + maxParallelism + "}";
    }
}
