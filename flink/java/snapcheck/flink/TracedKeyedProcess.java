package snapcheck.flink;

import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.TimeDomain;
import org.apache.flink.streaming.api.TimerService;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * Traced wrapper of a {@link KeyedProcessFunction}: keyed state and timers of the user function
 * work as usual (it runs with the wrapper's runtime context); records emitted from timers are
 * traced sends that follow no receive.
 */
public class TracedKeyedProcess<K, IN, OUT> extends Compat.KeyedProcess<K, Envelope<IN>, Envelope<OUT>>
        implements CheckpointedFunction, CheckpointListener {
    private static final long serialVersionUID = 1L;

    final TracedCore<OUT> core;
    private final KeyedProcessFunction<K, IN, OUT> inner;
    private transient TracedCore.Sender<OUT> sender;
    private transient Context current;
    private transient OnTimerContext currentTimer;
    private transient KeyedProcessFunction<K, IN, OUT>.Context adapter;
    private transient KeyedProcessFunction<K, IN, OUT>.OnTimerContext timerAdapter;

    TracedKeyedProcess(TracedCore<OUT> core, KeyedProcessFunction<K, IN, OUT> inner) {
        this.core = core;
        core.keyed = true;
        this.inner = inner;
    }

    @Override
    public void initializeState(FunctionInitializationContext ctx) throws Exception {
        core.initialize(getRuntimeContext(), ctx);
        Lifecycle.initialize(inner, getRuntimeContext(), ctx);
    }

    @Override
    protected void setUp() throws Exception {
        sender = new TracedCore.Sender<>(core);
        Compat.open(inner);
        adapter = inner.new Context() {
            @Override
            public Long timestamp() {
                return current.timestamp();
            }

            @Override
            public TimerService timerService() {
                return current.timerService();
            }

            @Override
            public <X> void output(OutputTag<X> tag, X value) {
                throw new UnsupportedOperationException("side outputs are not traced");
            }

            @Override
            public K getCurrentKey() {
                return current.getCurrentKey();
            }
        };
        timerAdapter = inner.new OnTimerContext() {
            @Override
            public Long timestamp() {
                return currentTimer.timestamp();
            }

            @Override
            public TimerService timerService() {
                return currentTimer.timerService();
            }

            @Override
            public <X> void output(OutputTag<X> tag, X value) {
                throw new UnsupportedOperationException("side outputs are not traced");
            }

            @Override
            public TimeDomain timeDomain() {
                return currentTimer.timeDomain();
            }

            @Override
            public K getCurrentKey() {
                return currentTimer.getCurrentKey();
            }
        };
    }

    @Override
    public void processElement(Envelope<IN> e, Context ctx, Collector<Envelope<OUT>> out) throws Exception {
        core.beforeRecord(e);
        current = ctx;
        sender.down = out;
        inner.processElement(e.payload, adapter, sender);
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<Envelope<OUT>> out) throws Exception {
        currentTimer = ctx;
        sender.down = out;
        inner.onTimer(timestamp, timerAdapter, sender);
    }

    @Override
    public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
        core.snapshot(ctx.getCheckpointId());
        Lifecycle.snapshot(inner, ctx);
    }

    @Override
    public void notifyCheckpointComplete(long id) throws Exception {
        core.notifyComplete(id);
        Lifecycle.complete(inner, id);
    }

    @Override
    public void notifyCheckpointAborted(long id) throws Exception {
        core.notifyAborted(id);
        Lifecycle.aborted(inner, id);
    }

    @Override
    public void close() throws Exception {
        try {
            inner.close();
        } finally {
            core.close();
        }
    }
}
