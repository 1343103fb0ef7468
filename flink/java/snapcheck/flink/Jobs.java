package snapcheck.flink;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.util.Collector;

/**
 * The job set (all operators at parallelism {@code p}; sources read {@code records} records per
 * subtask at {@code rate} records/s):
 *
 * <ul>
 *   <li>{@code keyed-agg}: src --keyBy--> agg (running sum per key) --rebalance--> sink;
 *   <li>{@code q3-join}, shaped like NexMark Query 3: persons --forward--> pfilter (state in
 *       OR/ID/CA) and auctions --forward--> afilter (category 10), both --keyBy(person id /
 *       seller)--> join (keyed two-input join with state) --keyBy(auction id)--> sink;
 *   <li>{@code chain}: src --forward--> parse --forward--> enrich --rebalance--> score
 *       --forward--> sink (forward edges are chained into one task);
 *   <li>{@code stateless-mid}: src --keyBy--> relay (a keyed map without any state of its own,
 *       its own task) --keyBy--> sink (keyed); relay and sink each in a slot sharing group of
 *       their own, so that with one slot per task manager both exchanges are network channels: the shape of
 *       FLINK-31963, a task without state between exchanges that carry channel state. When the
 *       sources are done and a slow sink still works through its backlog, the relay's buffers are
 *       empty while the sink's input buffers hold the relay's records;
 *   <li>{@code stateless-sink}: src --keyBy--> agg (running sum per key) --keyBy--> sink (a keyed
 *       sink without any state of its own): FLINK-31963's operator at the end of the job, where
 *       it has no output buffers, so that in-flight records on its input edge are the only state
 *       that concerns it.
 * </ul>
 */
public final class Jobs {
    private Jobs() {}

    static final String[] NAMES = {"keyed-agg", "q3-join", "chain", "stateless-mid", "stateless-sink"};

    static void build(String name, TracedJob job, int p, long records, double rate, long seed) {
        switch (name) {
            case "keyed-agg":
                keyedAgg(job, p, records, rate, seed);
                break;
            case "q3-join":
                q3(job, p, records, rate, seed);
                break;
            case "chain":
                chain(job, p, records, rate, seed);
                break;
            case "stateless-mid":
                statelessMid(job, p, records, rate, seed);
                break;
            case "stateless-sink":
                statelessSink(job, p, records, rate, seed);
                break;
            default:
                throw new IllegalArgumentException("unknown job '" + name + "' (known: " + String.join(", ", NAMES) + ")");
        }
    }

    static void keyedAgg(TracedJob job, int p, long records, double rate, long seed) {
        job.source("src", p, records, rate, new Numbers(seed), Types.LONG)
                .keyBy(v -> v % 32, Types.LONG)
                .process("agg", p, new SumPerKey(), Types.TUPLE(Types.LONG, Types.LONG))
                .rebalance()
                .sink("sink", p);
    }

    static void q3(TracedJob job, int p, long records, double rate, long seed) {
        TypeInformation<Person> person = Types.POJO(Person.class);
        TypeInformation<Auction> auction = Types.POJO(Auction.class);
        long people = Math.max(1, records * p);
        TracedStream<Person> persons = job.source("persons", p, records, rate, new Persons(seed, p), person)
                .filter("pfilter", p, x -> x.state.equals("OR") || x.state.equals("ID") || x.state.equals("CA"));
        TracedStream<Auction> auctions = job.source("auctions", p, records, rate, new Auctions(seed, p, people), auction)
                .filter("afilter", p, a -> a.category == 10);
        persons.keyBy(x -> x.id, Types.LONG)
                .connect(auctions.keyBy(a -> a.seller, Types.LONG))
                .process("join", p, new Q3Join(), Types.POJO(Q3Result.class))
                .keyBy(r -> r.auction, Types.LONG)
                .sink("sink", p);
    }

    static void chain(TracedJob job, int p, long records, double rate, long seed) {
        job.source("src", p, records, rate, new Numbers(seed), Types.LONG)
                .map("parse", p, v -> v * 3 + 1, Types.LONG)
                .map("enrich", p, v -> v ^ 0x5DEECE66DL, Types.LONG)
                .rebalance()
                .map("score", p, v -> v % 1000, Types.LONG)
                .sink("sink", p);
    }

    static void statelessMid(TracedJob job, int p, long records, double rate, long seed) {
        job.source("src", p, records, rate, new Numbers(seed), Types.LONG)
                .keyBy(v -> v % 32, Types.LONG)
                .statelessMap("relay", p, v -> v % 1000, Types.LONG)
                .slotGroup("relay")
                .keyBy(v -> v % 16, Types.LONG)
                .sink("sink", p, "sink");
    }

    static void statelessSink(TracedJob job, int p, long records, double rate, long seed) {
        job.source("src", p, records, rate, new Numbers(seed), Types.LONG)
                .keyBy(v -> v % 32, Types.LONG)
                .process("agg", p, new SumPerKey(), Types.TUPLE(Types.LONG, Types.LONG))
                .keyBy(t -> t.f0, Types.LONG)
                .statelessSink("sink", p);
    }

    /** Pseudo-random non-negative numbers below one million. */
    static final class Numbers implements Generator<Long> {
        private static final long serialVersionUID = 1L;
        private final long seed;

        Numbers(long seed) {
            this.seed = seed;
        }

        @Override
        public Long generate(int split, long offset) {
            return Generator.mix(seed, split, offset) % 1_000_000;
        }
    }

    /** Running sum per key; emits (key, sum) for every record. */
    static final class SumPerKey extends Compat.KeyedProcess<Long, Long, Tuple2<Long, Long>> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Long> sum;

        @Override
        protected void setUp() {
            sum = getRuntimeContext().getState(new ValueStateDescriptor<>("sum", Types.LONG));
        }

        @Override
        public void processElement(Long v, Context ctx, Collector<Tuple2<Long, Long>> out) throws Exception {
            Long s = sum.value();
            long next = (s == null ? 0 : s) + v;
            sum.update(next);
            out.collect(Tuple2.of(ctx.getCurrentKey(), next));
        }
    }

    /** NexMark person (the fields Query 3 uses). */
    public static class Person {
        public long id;
        public String name;
        public String city;
        public String state;

        public Person() {}
    }

    /** NexMark auction (the fields Query 3 uses). */
    public static class Auction {
        public long id;
        public long seller;
        public int category;

        public Auction() {}
    }

    /** Query 3's result: name, city, state of the seller and the auction id. */
    public static class Q3Result {
        public String name;
        public String city;
        public String state;
        public long auction;

        public Q3Result() {}
    }

    static final String[] STATES = {"OR", "ID", "CA", "WA", "NY", "TX"};

    static final class Persons implements Generator<Person> {
        private static final long serialVersionUID = 1L;
        private final long seed;
        private final int p;

        Persons(long seed, int p) {
            this.seed = seed;
            this.p = p;
        }

        @Override
        public Person generate(int split, long offset) {
            long h = Generator.mix(seed, 1000 + split, offset);
            Person x = new Person();
            x.id = offset * p + split;
            x.name = "person-" + x.id;
            x.city = "city-" + (h % 97);
            x.state = STATES[(int) (h % STATES.length)];
            return x;
        }
    }

    static final class Auctions implements Generator<Auction> {
        private static final long serialVersionUID = 1L;
        private final long seed;
        private final int p;
        private final long people;

        Auctions(long seed, int p, long people) {
            this.seed = seed;
            this.p = p;
            this.people = people;
        }

        @Override
        public Auction generate(int split, long offset) {
            long h = Generator.mix(seed, 2000 + split, offset);
            Auction a = new Auction();
            a.id = offset * p + split;
            a.seller = h % people;
            a.category = 8 + (int) ((h >>> 20) % 4);
            return a;
        }
    }

    /**
     * The join of Query 3 on person id = auction seller: keeps the person, buffers auctions whose
     * seller has not been seen yet, and emits one result per matching (person, auction).
     */
    static final class Q3Join extends Compat.KeyedCoProcess<Long, Person, Auction, Q3Result> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Person> seller;
        private transient ListState<Long> waiting;

        @Override
        protected void setUp() {
            seller = getRuntimeContext().getState(new ValueStateDescriptor<>("person", Types.POJO(Person.class)));
            waiting = getRuntimeContext().getListState(new ListStateDescriptor<>("auctions", Types.LONG));
        }

        @Override
        public void processElement1(Person x, Context ctx, Collector<Q3Result> out) throws Exception {
            seller.update(x);
            for (Long id : waiting.get()) {
                out.collect(result(x, id));
            }
            waiting.clear();
        }

        @Override
        public void processElement2(Auction a, Context ctx, Collector<Q3Result> out) throws Exception {
            Person x = seller.value();
            if (x == null) {
                waiting.add(a.id);
            } else {
                out.collect(result(x, a.id));
            }
        }

        private static Q3Result result(Person x, long auction) {
            Q3Result r = new Q3Result();
            r.name = x.name;
            r.city = x.city;
            r.state = x.state;
            r.auction = auction;
            return r;
        }
    }
}
