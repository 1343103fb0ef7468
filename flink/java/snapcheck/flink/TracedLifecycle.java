package snapcheck.flink;

import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;

/**
 * The checkpoint lifecycle of a traced wrapper without a user function that takes part in it:
 * each snapshot, completion and abort is logged by the wrapper's {@link TracedCore} and nothing
 * else happens.
 */
interface TracedLifecycle extends CheckpointedFunction, CheckpointListener {
    TracedCore<?> core();

    @Override
    default void snapshotState(FunctionSnapshotContext ctx) throws Exception {
        core().snapshot(ctx.getCheckpointId());
    }

    @Override
    default void notifyCheckpointComplete(long id) {
        core().notifyComplete(id);
    }

    @Override
    default void notifyCheckpointAborted(long id) {
        core().notifyAborted(id);
    }
}
