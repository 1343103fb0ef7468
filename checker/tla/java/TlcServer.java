import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.Properties;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * A warm TLC: one JVM that runs TLC jobs one after another, so that a process running
 * many short TLC jobs (a campaign's executor, a batch of traces) pays the JVM's start
 * once. Started by {@code snapcheck.checker.tla.server} with
 * {@code -Djava.system.class.loader=TlcServer$Loader}.
 *
 * <p>Isolation: every job gets a fresh class loader holding {@code tla2tools.jar} and
 * the job's classpath, so no static field of TLC survives from one job to the next
 * (TLC keeps much of its state in statics). The system class loader delegates to the
 * running job's loader, because TLC loads operator overrides (e.g. {@code TraceLog})
 * with a {@code URLClassLoader} whose parent is the system class loader. The JVM-wide
 * state a job touches (system properties, {@code System.out}/{@code err}) is set
 * before it and restored after it, and TLC's JMX beans are unregistered.
 *
 * <p>Protocol on stdin/stdout, big-endian, strings as a 4-byte length and UTF-8:
 * request = directory, n + n classpath entries, n + n (name, value) system
 * properties, n + n TLC arguments; response = exit code (int), CPU nanoseconds of
 * the whole JVM during the job (long), whether the server should be retired (int:
 * 1 when what the last collection left on the heap exceeds a quarter of the maximum
 * heap, or class metadata exceeds 256 MiB: past jobs' classes are not always
 * collected, TLC exports some of its objects over RMI and to JFR), output length
 * (int) and output bytes.
 * End of input ends the server; a job that TLC ends with {@code System.exit}
 * ends it too (the client then runs that job in a JVM of its own).
 */
public final class TlcServer {
    /** The system class loader: the JVM's application loader, or the running job's loader first. */
    public static final class Loader extends ClassLoader {
        static volatile ClassLoader job;

        public Loader(ClassLoader parent) {
            super(parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            ClassLoader current = job;
            if (current != null && !name.startsWith("java.") && !name.startsWith("TlcServer")) {
                try {
                    return current.loadClass(name);
                } catch (ClassNotFoundException e) {
                    // not TLC's: the JVM's own loaders below
                }
            }
            return super.loadClass(name, resolve);
        }
    }

    private static String readString(DataInputStream in) throws IOException {
        byte[] b = new byte[in.readInt()];
        in.readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    private static String[] readStrings(DataInputStream in) throws IOException {
        String[] out = new String[in.readInt()];
        for (int i = 0; i < out.length; i++) {
            out[i] = readString(in);
        }
        return out;
    }

    public static void main(String[] argv) throws Exception {
        // A starter that ends closes this server's input (end of file: exit below); one
        // that is killed does not, so the server also stops when its starter is gone, at
        // once, even in the middle of a job no one will read.
        ProcessHandle.current().parent().ifPresent(p -> p.onExit().thenRun(() -> Runtime.getRuntime().halt(1)));
        DataInputStream in = new DataInputStream(System.in);
        DataOutputStream out = new DataOutputStream(new FileOutputStream(FileDescriptor.out));
        PrintStream silent = new PrintStream(OutputStream.nullOutputStream());
        System.setOut(silent);
        System.setErr(silent);
        while (true) {
            String dir;
            try {
                dir = readString(in);
            } catch (EOFException e) {
                System.exit(0);
                return;
            }
            String[] classpath = readStrings(in);
            String[] props = readStrings(in);
            String[] args = readStrings(in);
            long cpu0 = cpu();
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            int exit = run(dir, classpath, props, args, buf, silent);
            long cpu = cpu() - cpu0;
            byte[] text = buf.toByteArray();
            out.writeInt(exit);
            out.writeLong(cpu);
            out.writeInt(tired() ? 1 : 0);
            out.writeInt(text.length);
            out.write(text);
            out.flush();
        }
    }

    private static boolean tired() {
        long retained = 0;
        long metadata = 0;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP && pool.getCollectionUsage() != null) {
                retained += pool.getCollectionUsage().getUsed();
            } else if (pool.getName().equals("Metaspace")) {
                metadata = pool.getUsage().getUsed();
            }
        }
        return retained > Runtime.getRuntime().maxMemory() / 4 || metadata > (256L << 20);
    }

    private static long cpu() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private static int run(String dir, String[] classpath, String[] props, String[] args,
                           ByteArrayOutputStream buf, PrintStream silent) throws Exception {
        URL[] urls = new URL[classpath.length];
        for (int i = 0; i < urls.length; i++) {
            urls[i] = Paths.get(classpath[i]).toUri().toURL();
        }
        Properties saved = (Properties) System.getProperties().clone();
        PrintStream job = new PrintStream(buf, true, StandardCharsets.UTF_8);
        int[] exit = {255};
        try (URLClassLoader loader = new URLClassLoader(urls, ClassLoader.getPlatformClassLoader())) {
            for (int i = 0; i + 1 < props.length; i += 2) {
                System.setProperty(props[i], props[i + 1]);
            }
            Loader.job = loader;
            System.setOut(job);
            System.setErr(job);
            Thread t = new Thread(null, () -> {
                Thread.currentThread().setContextClassLoader(loader);
                try {
                    exit[0] = runTlc(loader, dir, args, job);
                } catch (Throwable e) {
                    job.println("TLC server: " + e);
                    e.printStackTrace(job);
                    exit[0] = 255;
                }
            }, "tlc-job", 16L << 20);
            t.start();
            t.join();
        } finally {
            System.setOut(silent);
            System.setErr(silent);
            Loader.job = null;
            System.setProperties(saved);
            unregisterBeans();
        }
        job.flush();
        return exit[0];
    }

    /** What {@code tlc2.TLC.main} does, without its {@code System.exit}. */
    private static int runTlc(ClassLoader loader, String dir, String[] args, PrintStream job) throws Exception {
        Class<?> toolIO = loader.loadClass("util.ToolIO");
        toolIO.getField("out").set(null, job);
        toolIO.getField("err").set(null, job);
        toolIO.getMethod("setUserDir", String.class).invoke(null, dir);
        Class<?> tlcClass = loader.loadClass("tlc2.TLC");
        Object tlc = tlcClass.getConstructor().newInstance();
        if (!(Boolean) tlcClass.getMethod("handleParameters", String[].class).invoke(tlc, (Object) args)) {
            return 1;
        }
        Class<?> resolverType = loader.loadClass("util.FilenameToStream");
        Object resolver = loader.loadClass("util.SimpleFilenameToStream").getConstructor().newInstance();
        tlcClass.getMethod("setResolver", resolverType).invoke(tlc, resolver);
        int code = (Integer) tlcClass.getMethod("process").invoke(tlc);
        return (Integer) loader.loadClass("tlc2.output.EC$ExitStatus")
                .getMethod("errorConstantToExitStatus", int.class).invoke(null, code);
    }

    private static void unregisterBeans() {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        for (ObjectName name : server.queryNames(null, null)) {  // a copy: unregistering is safe
            if (name.getDomain().startsWith("tlc2")) {
                try {
                    server.unregisterMBean(name);
                } catch (Exception e) {
                    // already gone
                }
            }
        }
    }
}
