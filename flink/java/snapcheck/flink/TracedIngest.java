package snapcheck.flink;

import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * The first traced operator after an arbitrary (untraced) Flink source: each plain record becomes
 * a traced send of an envelope. Failure injection counts its records like any traced operator.
 */
public class TracedIngest<T> extends ProcessFunction<T, Envelope<T>> implements TracedLifecycle {
    private static final long serialVersionUID = 1L;

    final TracedCore<T> core;

    TracedIngest(TracedCore<T> core) {
        this.core = core;
    }

    @Override
    public TracedCore<?> core() {
        return core;
    }

    @Override
    public void initializeState(FunctionInitializationContext ctx) throws Exception {
        core.initialize(getRuntimeContext(), ctx);
    }

    @Override
    public void processElement(T value, Context ctx, Collector<Envelope<T>> out) throws Exception {
        core.beforeUntracedRecord();
        core.send(value, out);
    }

    @Override
    public void close() {
        core.close();
    }
}
