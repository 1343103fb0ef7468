package snapcheck.flink;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.util.Collector;

/**
 * Traced wrapper of a {@link MapFunction} on a keyed stream that keeps no state at all: Flink runs
 * it as a plain flat-map operator (no timer service, so its keyed backend stays empty), and the
 * wrapper registers no operator state ({@link TracedCore#keepsState} is false). Its checkpoint
 * therefore holds nothing but whatever channel state its own input and output buffers had: an
 * operator <em>without state of its own</em> in the sense of Flink's state assignment. With
 * {@code fn == null} it is a sink: it processes (receives) records and emits nothing.
 */
public class TracedKeyedMap<IN, OUT> extends RichFlatMapFunction<Envelope<IN>, Envelope<OUT>>
        implements TracedLifecycle {
    private static final long serialVersionUID = 1L;

    final TracedCore<OUT> core;
    private final MapFunction<IN, OUT> fn;
    private transient TracedCore.Sender<OUT> sender;

    TracedKeyedMap(TracedCore<OUT> core, MapFunction<IN, OUT> fn) {
        this.core = core;
        core.keyed = true;
        core.keepsState = false;
        this.fn = fn;
    }

    @Override
    public TracedCore<?> core() {
        return core;
    }

    @Override
    public void initializeState(FunctionInitializationContext ctx) throws Exception {
        core.initialize(getRuntimeContext(), ctx);
        sender = new TracedCore.Sender<>(core);
    }

    @Override
    public void flatMap(Envelope<IN> e, Collector<Envelope<OUT>> out) throws Exception {
        core.beforeRecord(e);
        if (fn != null) {
            sender.down = out;
            sender.collect(fn.map(e.payload));
        }
    }

    @Override
    public void close() throws Exception {
        core.close();
    }
}
