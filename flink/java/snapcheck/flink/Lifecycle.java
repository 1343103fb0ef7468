package snapcheck.flink;

import org.apache.flink.api.common.functions.Function;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.functions.util.FunctionUtils;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;

/** Forwarding of the rich-function lifecycle from a traced wrapper to the user's function. */
final class Lifecycle {
    private Lifecycle() {}

    static void initialize(Function inner, RuntimeContext rc, FunctionInitializationContext ctx) throws Exception {
        if (inner == null) {
            return;
        }
        FunctionUtils.setFunctionRuntimeContext(inner, rc);
        if (inner instanceof CheckpointedFunction) {
            ((CheckpointedFunction) inner).initializeState(ctx);
        }
    }

    static void snapshot(Function inner, FunctionSnapshotContext ctx) throws Exception {
        if (inner instanceof CheckpointedFunction) {
            ((CheckpointedFunction) inner).snapshotState(ctx);
        }
    }

    static void complete(Function inner, long id) throws Exception {
        if (inner instanceof CheckpointListener) {
            ((CheckpointListener) inner).notifyCheckpointComplete(id);
        }
    }

    static void aborted(Function inner, long id) throws Exception {
        if (inner instanceof CheckpointListener) {
            ((CheckpointListener) inner).notifyCheckpointAborted(id);
        }
    }
}
