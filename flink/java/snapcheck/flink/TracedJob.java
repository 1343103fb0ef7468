package snapcheck.flink;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Builds a traced job: every operator added through it (and through the {@link TracedStream}s it
 * returns) is wrapped so that its subtasks write trace files into {@code dir}. Usage:
 *
 * <pre>{@code
 * TracedJob job = new TracedJob(env, "/tmp/trace", faults, Map.of());
 * job.source("src", 2, 1000, 500, (split, off) -> off, Types.LONG)
 *    .keyBy(v -> v % 8, Types.LONG)
 *    .process("agg", 2, new MyKeyedProcessFunction(), Types.LONG)
 *    .rebalance()
 *    .sink("sink", 2);
 * }</pre>
 *
 * Rules: each traced operator has exactly one traced downstream operator (no side outputs, no
 * fan-out of one stream to two consumers), operator names are unique, and all operators use the
 * job's max parallelism ({@link #MAX_PARALLELISM}), which the keyed partitioning model relies on.
 */
public final class TracedJob {
    public static final int MAX_PARALLELISM = 128;

    final StreamExecutionEnvironment env;
    final String dir;
    final Faults faults;
    final Map<String, Long> workMicros;
    final Map<String, TracedCore<?>> ops = new LinkedHashMap<>();
    final Map<String, Integer> parallelism = new HashMap<>();
    /** The job generation: 0, then 1 for the job restored at another parallelism (see {@link Main}). */
    final int gen;

    public TracedJob(StreamExecutionEnvironment env, String dir, Faults faults, Map<String, Long> workMicros) {
        this(env, dir, faults, workMicros, 0);
    }

    TracedJob(StreamExecutionEnvironment env, String dir, Faults faults, Map<String, Long> workMicros, int gen) {
        this.gen = gen;
        this.env = env;
        this.dir = dir;
        this.faults = faults;
        this.workMicros = workMicros;
        env.setMaxParallelism(MAX_PARALLELISM);
    }

    <T> TracedCore<T> core(String name, String role, int par) {
        if (ops.containsKey(name) || name.contains("[") || name.contains(">") || name.startsWith("@")) {
            throw new IllegalArgumentException("operator name '" + name + "' is taken or contains [, > or a leading @");
        }
        TracedCore<T> c = new TracedCore<>(name, role, dir, faults, workMicros.getOrDefault(name, 0L), gen);
        ops.put(name, c);
        parallelism.put(name, par);
        return c;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static <T> TypeInformation<Envelope<T>> envelopeType(TypeInformation<T> payload) {
        Map<String, TypeInformation<?>> fields = new HashMap<>();
        fields.put("gen", Types.INT);
        fields.put("op", Types.STRING);
        fields.put("src", Types.INT);
        fields.put("att", Types.INT);
        fields.put("n", Types.LONG);
        fields.put("payload", payload);
        return (TypeInformation) Types.POJO(Envelope.class, fields);
    }

    /** The uids of the job's Flink operators: each traced operator, a source's reader, a sink's discarding tail. */
    List<String> uids() {
        List<String> uids = new ArrayList<>();
        for (String op : ops.keySet()) {
            uids.add(op);
            uids.add(op + ".input");
            uids.add(op + ".discard");
        }
        return uids;
    }

    /** A replayable source of {@code count} records per subtask, read by the traced operator {@code name}. */
    public <T> TracedStream<T> source(String name, int par, long count, double rate, Generator<T> generator,
                                      TypeInformation<T> type) {
        TracedCore<T> core = core(name, "source", par);
        core.inputs.add("@input");
        DataStream<Envelope<T>> raw = env.fromSource(new GeneratorSource<>(name, gen, count, rate, generator),
                        WatermarkStrategy.noWatermarks(), name + ".input", envelopeType(type))
                .setParallelism(par).uid(name + ".input");
        DataStream<Envelope<T>> s = raw.forward().process(new TracedProcess<>(core, new Identity<T>()), envelopeType(type))
                .name(name).uid(name).setParallelism(par);
        return new TracedStream<>(this, s, core, par, type, OutSpec.Mode.FORWARD, null);
    }

    /**
     * Trace a stream from any Flink source: the traced operator {@code name} (chained to the
     * stream) wraps each record in an envelope. Its input is not identified (no receive events),
     * so the source's own replay is not checked; everything downstream is.
     */
    public <T> TracedStream<T> from(String name, DataStream<T> stream, TypeInformation<T> type) {
        int par = stream.getParallelism();
        TracedCore<T> core = core(name, "source", par);
        DataStream<Envelope<T>> s = stream.forward().process(new TracedIngest<>(core), envelopeType(type))
                .name(name).uid(name).setParallelism(par);
        return new TracedStream<>(this, s, core, par, type, OutSpec.Mode.FORWARD, null);
    }

    /**
     * Execute the job, end it when its sources are done and it is quiet (see {@link Driver}), and
     * write {@code run.json} into the trace directory; returns the run's status. Then
     * {@code snapcheck flink merge DIR -o trace.jsonl}.
     */
    public String run(String name, Duration timeout, Duration quiet) throws Exception {
        Driver.Phase phase = Driver.run(this, name, timeout, quiet, null);
        Driver.writeRunJson(this, name, List.of(phase), new LinkedHashMap<>(), null);
        return phase.status;
    }

    /** The topology as JSON (for run.json): one entry per traced operator. */
    String topologyJson() {
        StringBuilder b = new StringBuilder("[");
        boolean first = true;
        for (Map.Entry<String, TracedCore<?>> e : ops.entrySet()) {
            TracedCore<?> c = e.getValue();
            List<String> ins = new ArrayList<>();
            for (String i : c.inputs) {
                ins.add(Json.str(i));
            }
            b.append(first ? "" : ",").append("{\"op\":").append(Json.str(c.op)).append(",\"parallelism\":")
                    .append(parallelism.get(c.op)).append(",\"role\":").append(Json.str(c.role))
                    .append(",\"inputs\":[").append(String.join(",", ins)).append("],\"out\":")
                    .append(c.out == null ? "null" : c.out.json()).append("}");
            first = false;
        }
        return b.append("]").toString();
    }

    /** The identity function (the traced operator that reads a source). */
    static final class Identity<T> extends ProcessFunction<T, T> {
        private static final long serialVersionUID = 1L;

        @Override
        public void processElement(T value, Context ctx, Collector<T> out) {
            out.collect(value);
        }
    }
}
