package snapcheck.flink;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * A replayable FLIP-27 source: split {@code i} (one per source subtask of the first job
 * generation, first assigned to reader {@code i}) is the sequence {@code generator.generate(i, 0),
 * generate(i, 1), ...} of {@code count} records, read at {@code rate} records per second per split
 * (0 = as fast as possible). The reader's checkpointed state is its splits with their offsets, as
 * for Kafka partitions; when the job is restored at another parallelism Flink redistributes those
 * splits over the new readers (round robin, as any operator list state), so a reader may hold
 * several splits (read in turn) or none. Every assignment is logged ({@code splits}) in the trace
 * of the traced operator chained to the reader. After its last record a reader stays idle (it
 * does not finish), so checkpoints continue until the driver ends the run.
 */
public final class GeneratorSource<T> implements Source<Envelope<T>, GeneratorSource.Split, List<GeneratorSource.Split>> {
    private static final long serialVersionUID = 1L;
    private static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "snapcheck-source-timer");
        t.setDaemon(true);
        return t;
    });

    final String op;
    final int gen;
    final long count;
    final double rate;
    final Generator<T> generator;

    GeneratorSource(String op, int gen, long count, double rate, Generator<T> generator) {
        this.op = op;
        this.gen = gen;
        this.count = count;
        this.rate = rate;
        this.generator = generator;
    }

    /** Split {@code index} with the offset of the next record to read. */
    public static final class Split implements SourceSplit {
        final int index;
        final long offset;

        Split(int index, long offset) {
            this.index = index;
            this.offset = offset;
        }

        @Override
        public String splitId() {
            return "split-" + index;
        }
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.CONTINUOUS_UNBOUNDED;
    }

    @Override
    public SourceReader<Envelope<T>, Split> createReader(SourceReaderContext ctx) {
        return new Reader(ctx.getIndexOfSubtask());
    }

    @Override
    public SplitEnumerator<Split, List<Split>> createEnumerator(SplitEnumeratorContext<Split> ctx) {
        List<Split> all = new ArrayList<>();
        for (int i = 0; i < ctx.currentParallelism(); i++) {
            all.add(new Split(i, 0));
        }
        return new Enumerator(ctx, all);
    }

    @Override
    public SplitEnumerator<Split, List<Split>> restoreEnumerator(SplitEnumeratorContext<Split> ctx, List<Split> state) {
        return new Enumerator(ctx, state);
    }

    @Override
    public SimpleVersionedSerializer<Split> getSplitSerializer() {
        return new SplitSerializer();
    }

    @Override
    public SimpleVersionedSerializer<List<Split>> getEnumeratorCheckpointSerializer() {
        return new StateSerializer();
    }

    private final class Reader implements SourceReader<Envelope<T>, Split> {
        private final int subtask;
        /** Held splits: {split index, next offset}. */
        private final List<long[]> splits = new ArrayList<>();
        private boolean noMoreSplits;
        private int next;
        private long started;
        private long emittedSinceStart;
        private CompletableFuture<Void> available = new CompletableFuture<>();

        Reader(int subtask) {
            this.subtask = subtask;
            Registry.reader(op, subtask, 0);
        }

        @Override
        public void start() {}

        private boolean exhausted() {
            for (long[] sp : splits) {
                if (sp[1] < count) {
                    return false;
                }
            }
            return true;
        }

        private void publish() {
            Registry.reader(op, subtask, (!splits.isEmpty() || noMoreSplits) && exhausted() ? 1 : 0);
        }

        @Override
        public InputStatus pollNext(ReaderOutput<Envelope<T>> output) {
            if (splits.isEmpty() || exhausted()) {
                publish();
                return InputStatus.NOTHING_AVAILABLE;
            }
            long now = System.nanoTime();
            if (rate > 0) {
                long due = started + (long) (emittedSinceStart * 1e9 / (rate * splits.size()));
                if (now < due) {
                    CompletableFuture<Void> f = new CompletableFuture<>();
                    available = f;
                    TIMER.schedule(() -> f.complete(null), due - now, TimeUnit.NANOSECONDS);
                    return InputStatus.NOTHING_AVAILABLE;
                }
            }
            if (Registry.firstRead == 0) {
                Registry.firstRead = now;
            }
            long[] sp = splits.get(next % splits.size());
            while (sp[1] >= count) {
                next++;
                sp = splits.get(next % splits.size());
            }
            next++;
            int index = (int) sp[0];
            long offset = sp[1]++;
            output.collect(new Envelope<>(gen, "@input", index, -1, offset, generator.generate(index, offset)));
            emittedSinceStart++;
            return InputStatus.MORE_AVAILABLE;
        }

        @Override
        public List<Split> snapshotState(long checkpointId) {
            List<Split> out = new ArrayList<>(splits.size());
            for (long[] sp : splits) {
                out.add(new Split((int) sp[0], sp[1]));
            }
            return out;
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            if ((!splits.isEmpty() || noMoreSplits) && exhausted()) {
                return new CompletableFuture<>();   // idle for good: the driver ends the run
            }
            return available;
        }

        @Override
        public void addSplits(List<Split> added) {
            List<long[]> got = new ArrayList<>();
            for (Split s : added) {
                long[] sp = {s.index, s.offset};
                splits.add(sp);
                got.add(sp.clone());
            }
            TracedCore<?> core = Registry.core(gen, op, subtask);
            if (core != null) {
                core.splits(got);
            }
            started = System.nanoTime();
            emittedSinceStart = 0;
            publish();
            available.complete(null);
        }

        @Override
        public void notifyNoMoreSplits() {
            noMoreSplits = true;
            publish();
            available.complete(null);
        }

        @Override
        public void close() {
            Registry.reader(op, subtask, 2);
        }
    }

    /**
     * Hands split {@code i} to reader {@code i mod parallelism}, a split given back (its reader
     * failed before a checkpoint took it) to the reader that had it; a reader with nothing
     * pending is told that no more splits come.
     */
    private static final class Enumerator implements SplitEnumerator<Split, List<Split>> {
        private final SplitEnumeratorContext<Split> ctx;
        private final Map<Integer, Split> pending = new TreeMap<>();
        private final Map<Integer, Integer> owner = new TreeMap<>();

        Enumerator(SplitEnumeratorContext<Split> ctx, List<Split> splits) {
            this.ctx = ctx;
            for (Split s : splits) {
                pending.put(s.index, s);
                owner.put(s.index, s.index % ctx.currentParallelism());
            }
        }

        @Override
        public void start() {}

        @Override
        public void handleSplitRequest(int subtaskId, String host) {
            addReader(subtaskId);
        }

        @Override
        public void addSplitsBack(List<Split> splits, int subtaskId) {
            for (Split s : splits) {
                pending.put(s.index, s);
                owner.put(s.index, subtaskId);
            }
            if (ctx.registeredReaders().containsKey(subtaskId)) {
                addReader(subtaskId);
            }
        }

        @Override
        public void addReader(int subtaskId) {
            List<Integer> mine = new ArrayList<>();
            for (Map.Entry<Integer, Integer> e : owner.entrySet()) {
                if (e.getValue() == subtaskId && pending.containsKey(e.getKey())) {
                    mine.add(e.getKey());
                }
            }
            for (int i : mine) {
                ctx.assignSplit(pending.remove(i), subtaskId);
            }
            if (mine.isEmpty()) {
                ctx.signalNoMoreSplits(subtaskId);
            }
        }

        @Override
        public List<Split> snapshotState(long checkpointId) {
            return new ArrayList<>(pending.values());
        }

        @Override
        public void close() {}
    }

    private static final class SplitSerializer implements SimpleVersionedSerializer<Split> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(Split s) throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            DataOutputStream d = new DataOutputStream(b);
            d.writeInt(s.index);
            d.writeLong(s.offset);
            d.flush();
            return b.toByteArray();
        }

        @Override
        public Split deserialize(int version, byte[] bytes) throws IOException {
            DataInputStream d = new DataInputStream(new ByteArrayInputStream(bytes));
            return new Split(d.readInt(), d.readLong());
        }
    }

    private static final class StateSerializer implements SimpleVersionedSerializer<List<Split>> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(List<Split> splits) throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            DataOutputStream d = new DataOutputStream(b);
            d.writeInt(splits.size());
            for (Split s : splits) {
                d.writeInt(s.index);
                d.writeLong(s.offset);
            }
            d.flush();
            return b.toByteArray();
        }

        @Override
        public List<Split> deserialize(int version, byte[] bytes) throws IOException {
            DataInputStream d = new DataInputStream(new ByteArrayInputStream(bytes));
            int n = d.readInt();
            List<Split> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                out.add(new Split(d.readInt(), d.readLong()));
            }
            return out;
        }
    }
}
