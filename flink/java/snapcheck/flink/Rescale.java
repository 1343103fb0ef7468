package snapcheck.flink;

import java.util.Map;

import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.runtime.io.network.api.writer.SubtaskStateMapper;
import org.apache.flink.streaming.runtime.partitioner.KeyGroupStreamPartitioner;
import org.apache.flink.streaming.runtime.partitioner.RebalancePartitioner;
import org.apache.flink.streaming.runtime.partitioner.StreamPartitioner;

/**
 * How Flink redistributes the in-flight data of each exchange of a traced job restored at another
 * parallelism, as {@code run.json}'s {@code rescale}: for every keyed or rebalance exchange
 * {@code up -> down}, the list of <em>virtual channels</em> {@code [u, i, u', j]}: the recovered
 * records of old channel {@code up[u] -> down[i]} go to new subtask {@code j} of {@code down}, on
 * its input channel from new subtask {@code u'} of {@code up}. The lists come from Flink's own
 * partitioners: the new downstream subtask {@code j} takes the channel state of the old subtasks
 * {@code getDownstreamSubtaskStateMapper().getOldSubtasks(j, ...)} (RANGE for keyed exchanges,
 * whose records the receiver then filters by its key groups; ROUND_ROBIN for rebalance), and the
 * old upstream subtask {@code u} maps onto the new {@code u'} with {@code u} among
 * {@code getUpstreamSubtaskStateMapper().getOldSubtasks(u', ...)}. Forward exchanges are chained
 * in the jobs here and carry no channel state.
 */
final class Rescale {
    private Rescale() {}

    /** {@code restoredState}: {@link CheckpointState#json} of the restored checkpoint, or null. */
    static String json(String kind, TracedJob old, TracedJob neu, String skipped, String restoredState) {
        StringBuilder b = new StringBuilder("{\"kind\":").append(Json.str(kind))
                .append(",\"skipped\":").append(Json.str(skipped))
                .append(",\"restored_state\":").append(restoredState == null ? "null" : restoredState)
                .append(",\"exchanges\":[");
        boolean first = true;
        if (neu != null) {
            for (Map.Entry<String, TracedCore<?>> e : old.ops.entrySet()) {
                OutSpec<?> out = e.getValue().out;
                if (out == null || out.mode == OutSpec.Mode.FORWARD) {
                    continue;
                }
                StreamPartitioner<Object> part = out.mode == OutSpec.Mode.KEYED
                        ? new KeyGroupStreamPartitioner<>((KeySelector<Object, Object>) x -> x, TracedJob.MAX_PARALLELISM)
                        : new RebalancePartitioner<>();
                SubtaskStateMapper down = part.getDownstreamSubtaskStateMapper();
                SubtaskStateMapper up = part.getUpstreamSubtaskStateMapper();
                int p1 = old.parallelism.get(e.getKey()), q1 = old.parallelism.get(out.to);
                int p2 = neu.parallelism.get(e.getKey()), q2 = neu.parallelism.get(out.to);
                StringBuilder v = new StringBuilder();
                for (int j = 0; j < q2; j++) {
                    for (int i : down.getOldSubtasks(j, q1, q2)) {
                        for (int u2 = 0; u2 < p2; u2++) {
                            for (int u : up.getOldSubtasks(u2, p1, p2)) {
                                v.append(v.length() > 0 ? "," : "").append('[').append(u).append(',').append(i)
                                        .append(',').append(u2).append(',').append(j).append(']');
                            }
                        }
                    }
                }
                b.append(first ? "" : ",").append("{\"from\":").append(Json.str(e.getKey()))
                        .append(",\"to\":").append(Json.str(out.to))
                        .append(",\"mode\":\"").append(out.mode.name().toLowerCase()).append('"')
                        .append(",\"downstream_mapper\":").append(Json.str(down.name()))
                        .append(",\"upstream_mapper\":").append(Json.str(up.name()))
                        .append(",\"virtual\":[").append(v).append("]}");
                first = false;
            }
        }
        return b.append("]}").toString();
    }
}
