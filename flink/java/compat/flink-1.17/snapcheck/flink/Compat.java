package snapcheck.flink;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

import org.apache.flink.api.common.functions.Function;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.functions.util.FunctionUtils;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.jobgraph.SavepointConfigOptions;
import org.apache.flink.shaded.guava30.com.google.common.hash.Hashing;
import org.apache.flink.streaming.api.CheckpointingMode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.CheckpointConfig;
import org.apache.flink.streaming.api.environment.ExecutionCheckpointingOptions;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.functions.sink.DiscardingSink;

/**
 * The Flink 1.17 side of the version shim (see the Flink 2.x {@code Compat} for the contract):
 * {@code open(Configuration)}, the checkpointing options of {@code ExecutionCheckpointingOptions},
 * {@code org.apache.flink.streaming.api.CheckpointingMode}, the {@code SinkFunction} discarding
 * sink and the subtask accessors of {@code RuntimeContext}.
 */
final class Compat {
    private Compat() {}

    static final String LINE = "1.17";

    static void open(Function f) throws Exception {
        FunctionUtils.openFunction(f, new Configuration());
    }

    static int subtask(RuntimeContext rc) {
        return rc.getIndexOfThisSubtask();
    }

    static int attempt(RuntimeContext rc) {
        return rc.getAttemptNumber();
    }

    static int parallelism(RuntimeContext rc) {
        return rc.getNumberOfParallelSubtasks();
    }

    static void checkpointing(Configuration conf, Duration interval, boolean exactlyOnce, boolean unaligned,
                              Duration alignedTimeout, String dirUri) {
        conf.set(ExecutionCheckpointingOptions.CHECKPOINTING_INTERVAL, interval);
        conf.set(ExecutionCheckpointingOptions.CHECKPOINTING_MODE,
                exactlyOnce ? CheckpointingMode.EXACTLY_ONCE : CheckpointingMode.AT_LEAST_ONCE);
        conf.set(ExecutionCheckpointingOptions.ENABLE_UNALIGNED, unaligned);
        if (unaligned) {
            conf.set(ExecutionCheckpointingOptions.ALIGNED_CHECKPOINT_TIMEOUT, alignedTimeout);
        }
        conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, dirUri);
    }

    static void retainCheckpoints(Configuration conf) {
        conf.set(ExecutionCheckpointingOptions.EXTERNALIZED_CHECKPOINT,
                CheckpointConfig.ExternalizedCheckpointCleanup.RETAIN_ON_CANCELLATION);
    }

    static void restoreFrom(Configuration conf, String path) {
        conf.set(SavepointConfigOptions.SAVEPOINT_PATH, path);
    }

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
        return cc.getCheckpointingMode() == CheckpointingMode.AT_LEAST_ONCE;
    }

    static <T> void discard(DataStream<T> s, String name, int par) {
        s.addSink(new DiscardingSink<>()).name(name).uid(name).setParallelism(par);
    }

    abstract static class Process<I, O> extends ProcessFunction<I, O> {
        private static final long serialVersionUID = 1L;

        @Override
        public final void open(Configuration parameters) throws Exception {
            setUp();
        }

        protected void setUp() throws Exception {}
    }

    abstract static class KeyedProcess<K, I, O> extends KeyedProcessFunction<K, I, O> {
        private static final long serialVersionUID = 1L;

        @Override
        public final void open(Configuration parameters) throws Exception {
            setUp();
        }

        protected void setUp() throws Exception {}
    }

    abstract static class KeyedCoProcess<K, A, B, O> extends KeyedCoProcessFunction<K, A, B, O> {
        private static final long serialVersionUID = 1L;

        @Override
        public final void open(Configuration parameters) throws Exception {
            setUp();
        }

        protected void setUp() throws Exception {}
    }

    /** The operator id Flink derives from a user-given uid (the murmur3-128 hash of its UTF-8 bytes). */
    static OperatorID operatorIdOfUid(String uid) {
        return new OperatorID(Hashing.murmur3_128(0).newHasher().putString(uid, StandardCharsets.UTF_8).hash().asBytes());
    }
}
