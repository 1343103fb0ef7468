package snapcheck.flink;

import org.apache.flink.api.common.functions.FilterFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.datastream.ConnectedStreams;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.util.Collector;

/**
 * The output of a traced operator, with the partitioning its downstream operator will use
 * ({@link #forward()} by default, {@link #rebalance()}, {@link #keyBy}). Attaching the downstream
 * operator tells the upstream wrapper the partitioning, so that it can log each send's target.
 */
public final class TracedStream<T> {
    final TracedJob job;
    final DataStream<Envelope<T>> stream;
    final TracedCore<T> producer;
    final int parallelism;
    final TypeInformation<T> type;
    final OutSpec.Mode mode;
    final KeySelector<T, ?> key;

    TracedStream(TracedJob job, DataStream<Envelope<T>> stream, TracedCore<T> producer, int parallelism,
                 TypeInformation<T> type, OutSpec.Mode mode, KeySelector<T, ?> key) {
        this.job = job;
        this.stream = stream;
        this.producer = producer;
        this.parallelism = parallelism;
        this.type = type;
        this.mode = mode;
        this.key = key;
    }

    /**
     * Put the operator producing this stream into slot sharing group {@code group}: its subtasks
     * never share a slot with those of other groups, so on a cluster with one slot per task
     * manager its input and output channels are network channels (with receiver buffers and
     * credit-based flow control) rather than local ones.
     */
    public TracedStream<T> slotGroup(String group) {
        ((SingleOutputStreamOperator<Envelope<T>>) stream).slotSharingGroup(group);
        return this;
    }

    public TracedStream<T> rebalance() {
        return new TracedStream<>(job, stream, producer, parallelism, type, OutSpec.Mode.REBALANCE, null);
    }

    public TracedStream<T> forward() {
        return new TracedStream<>(job, stream, producer, parallelism, type, OutSpec.Mode.FORWARD, null);
    }

    public <K> Keyed<K, T> keyBy(KeySelector<T, K> keySelector, TypeInformation<K> keyType) {
        return new Keyed<>(new TracedStream<>(job, stream, producer, parallelism, type, OutSpec.Mode.KEYED, keySelector),
                keySelector, keyType);
    }

    /** Record that {@code down} (parallelism {@code par}) consumes this stream. */
    void attach(TracedCore<?> down, int par) {
        if (producer.out != null) {
            throw new IllegalStateException("traced operator '" + producer.op + "' already feeds '" + producer.out.to
                    + "'; a traced operator has exactly one traced downstream operator");
        }
        if (mode == OutSpec.Mode.FORWARD && par != parallelism) {
            throw new IllegalArgumentException("forward from '" + producer.op + "' (parallelism " + parallelism
                    + ") to '" + down.op + "' (parallelism " + par + ") needs equal parallelism");
        }
        producer.out = new OutSpec<>(down.op, mode, par, TracedJob.MAX_PARALLELISM, key);
        down.inputs.add(producer.op);
    }

    private DataStream<Envelope<T>> partitioned() {
        return mode == OutSpec.Mode.REBALANCE ? stream.rebalance() : stream.forward();
    }

    public <R> TracedStream<R> process(String name, int par, ProcessFunction<T, R> fn, TypeInformation<R> outType) {
        TracedCore<R> core = job.core(name, "task", par);
        attach(core, par);
        DataStream<Envelope<R>> s = partitioned().process(new TracedProcess<>(core, fn), TracedJob.envelopeType(outType))
                .name(name).uid(name).setParallelism(par);
        return new TracedStream<>(job, s, core, par, outType, OutSpec.Mode.FORWARD, null);
    }

    public <R> TracedStream<R> map(String name, int par, MapFunction<T, R> fn, TypeInformation<R> outType) {
        return process(name, par, new MapAdapter<>(fn), outType);
    }

    public TracedStream<T> filter(String name, int par, FilterFunction<T> fn) {
        return process(name, par, new FilterAdapter<>(fn), type);
    }

    /** A traced sink: its subtasks process (receive) records and emit nothing. */
    public void sink(String name, int par) {
        TracedCore<Void> core = job.core(name, "sink", par);
        attach(core, par);
        Compat.discard(partitioned().process(new TracedProcess<T, Void>(core, null), TracedJob.envelopeType(Types.VOID))
                .name(name).uid(name).setParallelism(par), name + ".discard", par);
    }

    /** A keyed traced stream. */
    public static final class Keyed<K, T> {
        final TracedStream<T> up;
        final KeySelector<T, K> key;
        final TypeInformation<K> keyType;

        Keyed(TracedStream<T> up, KeySelector<T, K> key, TypeInformation<K> keyType) {
            this.up = up;
            this.key = key;
            this.keyType = keyType;
        }

        KeyedStream<Envelope<T>, K> keyed() {
            return up.stream.keyBy(new PayloadKey<>(key), keyType);
        }

        public <R> TracedStream<R> process(String name, int par, KeyedProcessFunction<K, T, R> fn, TypeInformation<R> outType) {
            TracedCore<R> core = up.job.core(name, "task", par);
            up.attach(core, par);
            DataStream<Envelope<R>> s = keyed().process(new TracedKeyedProcess<>(core, fn), TracedJob.envelopeType(outType))
                    .name(name).uid(name).setParallelism(par);
            return new TracedStream<>(up.job, s, core, par, outType, OutSpec.Mode.FORWARD, null);
        }

        /**
         * A traced keyed map without any state of its own (see {@link TracedKeyedMap}): at a
         * checkpoint it holds at most the channel state of its own input and output buffers.
         */
        public <R> TracedStream<R> statelessMap(String name, int par, MapFunction<T, R> fn, TypeInformation<R> outType) {
            TracedCore<R> core = up.job.core(name, "task", par);
            up.attach(core, par);
            DataStream<Envelope<R>> s = keyed().flatMap(new TracedKeyedMap<>(core, fn), TracedJob.envelopeType(outType))
                    .name(name).uid(name).setParallelism(par);
            return new TracedStream<>(up.job, s, core, par, outType, OutSpec.Mode.FORWARD, null);
        }

        /**
         * A traced keyed sink without any state of its own (see {@link TracedKeyedMap}): it has no
         * output either, so its checkpoint holds at most the input part of channel state.
         */
        public void statelessSink(String name, int par) {
            TracedCore<Void> core = up.job.core(name, "sink", par);
            up.attach(core, par);
            Compat.discard(keyed().flatMap(new TracedKeyedMap<T, Void>(core, null), TracedJob.envelopeType(Types.VOID))
                    .name(name).uid(name).setParallelism(par), name + ".discard", par);
        }

        /** A traced keyed sink. */
        public void sink(String name, int par) {
            sink(name, par, null);
        }

        /** A traced keyed sink in slot sharing group {@code slotGroup} (null: the default group; see {@link #slotGroup}). */
        public void sink(String name, int par, String slotGroup) {
            TracedCore<Void> core = up.job.core(name, "sink", par);
            up.attach(core, par);
            SingleOutputStreamOperator<Envelope<Void>> s = keyed()
                    .process(new TracedKeyedProcess<K, T, Void>(core, new Consume<>()), TracedJob.envelopeType(Types.VOID))
                    .name(name).uid(name).setParallelism(par);
            if (slotGroup != null) {
                s.slotSharingGroup(slotGroup);
            }
            Compat.discard(s, name + ".discard", par);
        }

        public <U> Connected<K, T, U> connect(Keyed<K, U> other) {
            return new Connected<>(this, other);
        }
    }

    /** Two keyed traced streams with the same key type, for a keyed two-input operator. */
    public static final class Connected<K, A, B> {
        final Keyed<K, A> a;
        final Keyed<K, B> b;

        Connected(Keyed<K, A> a, Keyed<K, B> b) {
            this.a = a;
            this.b = b;
        }

        public <R> TracedStream<R> process(String name, int par, KeyedCoProcessFunction<K, A, B, R> fn,
                                           TypeInformation<R> outType) {
            TracedCore<R> core = a.up.job.core(name, "task", par);
            a.up.attach(core, par);
            b.up.attach(core, par);
            ConnectedStreams<Envelope<A>, Envelope<B>> c = a.up.stream.connect(b.up.stream)
                    .keyBy(new PayloadKey<>(a.key), new PayloadKey<>(b.key), a.keyType);
            DataStream<Envelope<R>> s = c.process(new TracedKeyedCoProcess<>(core, fn), TracedJob.envelopeType(outType))
                    .name(name).uid(name).setParallelism(par);
            return new TracedStream<>(a.up.job, s, core, par, outType, OutSpec.Mode.FORWARD, null);
        }
    }

    /** Keys an envelope by its payload's key. */
    static final class PayloadKey<T, K> implements KeySelector<Envelope<T>, K> {
        private static final long serialVersionUID = 1L;
        private final KeySelector<T, K> inner;

        PayloadKey(KeySelector<T, K> inner) {
            this.inner = inner;
        }

        @Override
        public K getKey(Envelope<T> e) throws Exception {
            return inner.getKey(e.payload);
        }
    }

    static final class MapAdapter<T, R> extends ProcessFunction<T, R> {
        private static final long serialVersionUID = 1L;
        private final MapFunction<T, R> fn;

        MapAdapter(MapFunction<T, R> fn) {
            this.fn = fn;
        }

        @Override
        public void processElement(T value, Context ctx, Collector<R> out) throws Exception {
            out.collect(fn.map(value));
        }
    }

    static final class FilterAdapter<T> extends ProcessFunction<T, T> {
        private static final long serialVersionUID = 1L;
        private final FilterFunction<T> fn;

        FilterAdapter(FilterFunction<T> fn) {
            this.fn = fn;
        }

        @Override
        public void processElement(T value, Context ctx, Collector<T> out) throws Exception {
            if (fn.filter(value)) {
                out.collect(value);
            }
        }
    }

    static final class Consume<K, T> extends KeyedProcessFunction<K, T, Void> {
        private static final long serialVersionUID = 1L;

        @Override
        public void processElement(T value, Context ctx, Collector<Void> out) {}
    }
}
