package snapcheck.flink;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The trace file of one traced operator subtask attempt: {@code <dir>/<op>-<subtask>-<attempt>.jsonl}
 * in generation 0, {@code <dir>/g<gen>.<op>-<subtask>-<attempt>.jsonl} in a later generation.
 *
 * <p>Line 1 describes the subtask; every further line is one event
 * {@code {"g": G, "t": T, "e": TYPE, ...}}. {@code g} comes from one JVM-wide counter, so the
 * events of all subtasks of a MiniCluster are totally ordered consistently with real time: an event
 * logged before another (in any thread) has the smaller {@code g}. Senders log a send before handing
 * the record to Flink, so a send always precedes its receive. {@code t} is microseconds since the
 * run started. Each event is one unbuffered {@code write} (classic, non-interruptible I/O): when a
 * subtask dies or is cancelled, every event it logged is already in the file.
 */
final class TraceLog {
    static final AtomicLong CLOCK = new AtomicLong();
    static volatile long t0 = System.nanoTime();
    /** Last time (nanoTime) any subtask sent or processed a record: the driver's quiescence test. */
    static volatile long lastData = System.nanoTime();

    private final FileOutputStream out;

    TraceLog(String dir, int gen, String op, int subtask, int attempt, String header) {
        File d = new File(dir);
        if (!d.isDirectory() && !d.mkdirs() && !d.isDirectory()) {
            throw new UncheckedIOException(new IOException("cannot create trace directory " + dir));
        }
        try {
            out = new FileOutputStream(new File(d, (gen > 0 ? "g" + gen + "." : "") + op + "-" + subtask + "-" + attempt
                    + ".jsonl"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        write(header + "\n");
    }

    /** Write one event; {@code fields} is either empty or starts with a comma. */
    void event(String type, String fields) {
        long g = CLOCK.incrementAndGet();
        long t = (System.nanoTime() - t0) / 1000;
        write("{\"g\":" + g + ",\"t\":" + t + ",\"e\":\"" + type + "\"" + fields + "}\n");
    }

    static void touch() {
        lastData = System.nanoTime();
    }

    private void write(String s) {
        try {
            out.write(s.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    void close() {
        try {
            out.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
