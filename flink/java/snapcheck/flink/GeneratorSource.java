package snapcheck.flink;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
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
 * A replayable FLIP-27 source: split {@code i} (one per source subtask, always assigned to reader
 * {@code i}) is the sequence {@code generator.generate(i, 0), generate(i, 1), ...} of
 * {@code count} records, read at {@code rate} records per second (0 = as fast as possible). The
 * reader's checkpointed state is its offset, as for a Kafka partition. After the last record the
 * reader stays idle (it does not finish), so checkpoints continue until the driver ends the run.
 */
public final class GeneratorSource<T> implements Source<Envelope<T>, GeneratorSource.Split, List<GeneratorSource.Split>> {
    private static final long serialVersionUID = 1L;
    private static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "snapcheck-source-timer");
        t.setDaemon(true);
        return t;
    });

    final String op;
    final long count;
    final double rate;
    final Generator<T> generator;

    GeneratorSource(String op, long count, double rate, Generator<T> generator) {
        this.op = op;
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
        private Split split;
        private long offset;
        private long started;
        private long emittedSinceStart;
        private CompletableFuture<Void> available = new CompletableFuture<>();

        Reader(int subtask) {
            this.subtask = subtask;
            Registry.reader(op, subtask, 0);
        }

        @Override
        public void start() {}

        @Override
        public InputStatus pollNext(ReaderOutput<Envelope<T>> output) {
            if (split == null) {
                return InputStatus.NOTHING_AVAILABLE;
            }
            if (offset >= count) {
                Registry.reader(op, subtask, 1);
                return InputStatus.NOTHING_AVAILABLE;
            }
            long now = System.nanoTime();
            if (rate > 0) {
                long due = started + (long) (emittedSinceStart * 1e9 / rate);
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
            output.collect(new Envelope<>("@input", split.index, -1, offset, generator.generate(split.index, offset)));
            offset++;
            emittedSinceStart++;
            return InputStatus.MORE_AVAILABLE;
        }

        @Override
        public List<Split> snapshotState(long checkpointId) {
            return split == null ? Collections.emptyList() : Collections.singletonList(new Split(split.index, offset));
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            if (split != null && offset >= count) {
                return new CompletableFuture<>();   // idle for good: the driver ends the run
            }
            return available;
        }

        @Override
        public void addSplits(List<Split> splits) {
            if (splits.size() != 1 || split != null) {
                throw new IllegalStateException("reader " + subtask + " got splits " + splits + " (has " + split + ")");
            }
            split = splits.get(0);
            offset = split.offset;
            started = System.nanoTime();
            emittedSinceStart = 0;
            Registry.reader(op, subtask, offset >= count ? 1 : 0);
            available.complete(null);
        }

        @Override
        public void notifyNoMoreSplits() {}

        @Override
        public void close() {
            Registry.reader(op, subtask, 2);
        }
    }

    private static final class Enumerator implements SplitEnumerator<Split, List<Split>> {
        private final SplitEnumeratorContext<Split> ctx;
        private final Map<Integer, Split> pending = new TreeMap<>();

        Enumerator(SplitEnumeratorContext<Split> ctx, List<Split> splits) {
            this.ctx = ctx;
            for (Split s : splits) {
                pending.put(s.index, s);
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
            }
            if (ctx.registeredReaders().containsKey(subtaskId)) {
                addReader(subtaskId);
            }
        }

        @Override
        public void addReader(int subtaskId) {
            Split s = pending.remove(subtaskId);
            if (s != null) {
                ctx.assignSplit(s, subtaskId);
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
