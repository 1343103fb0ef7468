package snapcheck.flink;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

import org.apache.flink.api.common.functions.DefaultOpenContext;
import org.apache.flink.api.common.functions.Function;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.functions.util.FunctionUtils;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.shaded.guava33.com.google.common.hash.Hashing;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.CheckpointConfig;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * The Flink 2.x side of the version shim: every API call of the adapter that differs between
 * the Flink 2.x and 1.17 lines goes through here (the build compiles exactly one of
 * {@code compat/flink-2} and {@code compat/flink-1.17}, chosen by the Flink version it compiles
 * against). The function base classes below forward the line's {@code open} to a
 * version-independent {@code setUp()}.
 */
final class Compat {
    private Compat() {}

    static final String LINE = "2";

    static void open(Function f) throws Exception {
        FunctionUtils.openFunction(f, DefaultOpenContext.INSTANCE);
    }

    static int subtask(RuntimeContext rc) {
        return rc.getTaskInfo().getIndexOfThisSubtask();
    }

    static int attempt(RuntimeContext rc) {
        return rc.getTaskInfo().getAttemptNumber();
    }

    static int parallelism(RuntimeContext rc) {
        return rc.getTaskInfo().getNumberOfParallelSubtasks();
    }

    /** Checkpointing every {@code interval}: exactly once or at least once, aligned or unaligned. */
    static void checkpointing(Configuration conf, Duration interval, boolean exactlyOnce, boolean unaligned,
                              Duration alignedTimeout, String dirUri) {
        conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, interval);
        conf.set(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE,
                exactlyOnce ? CheckpointingMode.EXACTLY_ONCE : CheckpointingMode.AT_LEAST_ONCE);
        conf.set(CheckpointingOptions.ENABLE_UNALIGNED, unaligned);
        if (unaligned) {
            conf.set(CheckpointingOptions.ALIGNED_CHECKPOINT_TIMEOUT, alignedTimeout);
        }
        conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, dirUri);
    }

    /** Keep the latest completed checkpoint when the job fails or is cancelled. */
    static void retainCheckpoints(Configuration conf) {
        conf.set(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
                ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
    }

    static void restoreFrom(Configuration conf, String path) {
        conf.set(StateRecoveryOptions.SAVEPOINT_PATH, path);
    }

    /** Fixed-delay restarts ({@code attempts} of them), or none: a failure fails the job for good. */
    static void restarts(Configuration conf, int attempts, Duration delay) {
        if (attempts <= 0) {
            conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
            return;
        }
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, attempts);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, delay);
    }

    static boolean atLeastOnce(CheckpointConfig cc) {
        return cc.getCheckpointingConsistencyMode() == CheckpointingMode.AT_LEAST_ONCE;
    }

    static <T> void discard(DataStream<T> s, String name, int par) {
        s.sinkTo(new DiscardingSink<>()).name(name).uid(name).setParallelism(par);
    }

    abstract static class Process<I, O> extends ProcessFunction<I, O> {
        private static final long serialVersionUID = 1L;

        @Override
        public final void open(OpenContext ctx) throws Exception {
            setUp();
        }

        protected void setUp() throws Exception {}
    }

    abstract static class KeyedProcess<K, I, O> extends KeyedProcessFunction<K, I, O> {
        private static final long serialVersionUID = 1L;

        @Override
        public final void open(OpenContext ctx) throws Exception {
            setUp();
        }

        protected void setUp() throws Exception {}
    }

    abstract static class KeyedCoProcess<K, A, B, O> extends KeyedCoProcessFunction<K, A, B, O> {
        private static final long serialVersionUID = 1L;

        @Override
        public final void open(OpenContext ctx) throws Exception {
            setUp();
        }

        protected void setUp() throws Exception {}
    }

    /** The operator id Flink derives from a user-given uid (the murmur3-128 hash of its UTF-8 bytes). */
    static OperatorID operatorIdOfUid(String uid) {
        return new OperatorID(Hashing.murmur3_128(0).newHasher().putString(uid, StandardCharsets.UTF_8).hash().asBytes());
    }
}
