package snapcheck.flink;

import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.TimerService;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * Traced wrapper of a non-keyed {@link ProcessFunction}: the user function sees plain records;
 * the wrapper traces every record it processes and emits (see {@link TracedCore}). With
 * {@code inner == null} the wrapper is a pure traced sink.
 */
public class TracedProcess<IN, OUT> extends Compat.Process<Envelope<IN>, Envelope<OUT>>
        implements CheckpointedFunction, CheckpointListener {
    private static final long serialVersionUID = 1L;

    final TracedCore<OUT> core;
    private final ProcessFunction<IN, OUT> inner;
    private transient TracedCore.Sender<OUT> sender;
    private transient Context current;
    private transient ProcessFunction<IN, OUT>.Context adapter;

    TracedProcess(TracedCore<OUT> core, ProcessFunction<IN, OUT> inner) {
        this.core = core;
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
        if (inner != null) {
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
            };
        }
    }

    @Override
    public void processElement(Envelope<IN> e, Context ctx, Collector<Envelope<OUT>> out) throws Exception {
        core.beforeRecord(e);
        if (inner != null) {
            current = ctx;
            sender.down = out;
            inner.processElement(e.payload, adapter, sender);
        }
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
            if (inner != null) {
                inner.close();
            }
        } finally {
            core.close();
        }
    }
}
