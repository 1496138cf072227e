// JVM parity probe (tests/parity/runtimes.py). Each mode exercises what the JVM does with
// signals and threads: implicit null checks and divisions by zero (SIGSEGV and SIGFPE the
// JVM's own handlers turn into exceptions), stack overflow (guard pages), a thread pool,
// files, a child process (posix_spawn of jspawnhelper), GC, shutdown hooks, 100 children
// started from 4 threads at once.
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

public class Probe {
    static int depth = 0;

    static void recurse() {
        depth++;
        recurse();
    }

    static String absent() {
        return System.getProperty("no.such.property");
    }

    static int nullChecks(int n) {
        int caught = 0;
        for (int i = 0; i < n; i++) {
            try {
                caught += absent().length();
            } catch (NullPointerException e) {
                caught++;
            }
        }
        return caught;
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "all";
        switch (mode) {
            case "uncaught":
                throw new IllegalStateException("uncaught on purpose");
            case "exit":
                System.exit(3);
            case "wait": {
                // Ready for a signal: the harness waits for the file, then signals.
                Runtime.getRuntime().addShutdownHook(new Thread(() -> System.out.println("shutdown hook ran")));
                Files.writeString(Path.of("ready"), "ready");
                Thread.sleep(Long.parseLong(args[1]));
                System.out.println("slept");
                return;
            }
            case "spawn": {
                // 4 threads start 25 processes each at once (the launch mechanism,
                // posix_spawn, vfork or fork, is chosen with -Djdk.lang.Process.launchMechanism).
                List<Thread> threads = new ArrayList<>();
                int[] failed = {0};
                for (int t = 0; t < 4; t++) {
                    Thread th = new Thread(() -> {
                        try {
                            for (int i = 0; i < 25; i++) {
                                if (new ProcessBuilder("true").start().waitFor() != 0) {
                                    synchronized (failed) {
                                        failed[0]++;
                                    }
                                }
                            }
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    });
                    th.start();
                    threads.add(th);
                }
                for (Thread th : threads) th.join();
                System.out.println("spawned 100, failed " + failed[0]);
                return;
            }
            case "crash": {
                // Many handled SIGSEGVs first (NullPointerException), then a real crash:
                // the JVM writes hs_err and dies of SIGABRT.
                System.out.println("null checks " + nullChecks(100000));
                System.out.flush();
                Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
                f.setAccessible(true);
                ((sun.misc.Unsafe) f.get(null)).putAddress(16, 42);
                return;
            }
            default:
                break;
        }
        System.out.println("null checks " + nullChecks(20000));
        try {
            recurse();
        } catch (StackOverflowError e) {
            System.out.println("stack overflow caught, deep: " + (depth > 1000));
        }
        int divs = 0;
        for (int i = 0; i < 20000; i++) {
            try {
                int zero = i - i;
                divs += 10 / zero;
            } catch (ArithmeticException e) {
                divs++;
            }
        }
        System.out.println("divisions by zero " + divs);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        List<Future<Long>> parts = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            final long k = t;
            parts.add(pool.submit(() -> {
                long s = 0;
                for (long i = 0; i < 2_000_000; i++) s += i ^ k;
                return s;
            }));
        }
        long total = 0;
        for (Future<Long> f : parts) total += f.get();
        pool.shutdown();
        System.out.println("threads " + total);
        Path d = Path.of("out");
        Files.createDirectories(d);
        for (int i = 0; i < 50; i++) Files.writeString(d.resolve("f" + i + ".txt"), "line " + i + "\n");
        int bytes = 0;
        for (int i = 0; i < 50; i++) bytes += Files.readAllBytes(d.resolve("f" + i + ".txt")).length;
        System.out.println("bytes " + bytes);
        Process p = new ProcessBuilder("sh", "-c", "echo child; exit 3").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes()).trim();
        System.out.println("child " + out + " " + p.waitFor());
        List<byte[]> keep = new ArrayList<>();
        for (int i = 0; i < 2000; i++) {
            byte[] b = new byte[64 * 1024];
            if (i % 10 == 0) keep.add(b);
        }
        System.gc();
        System.out.println("kept " + keep.size());
    }
}
