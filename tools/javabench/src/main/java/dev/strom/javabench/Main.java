package dev.strom.javabench;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.admin.Admin;
import org.apache.fluss.client.lookup.Lookuper;
import org.apache.fluss.client.table.Table;
import org.apache.fluss.client.table.scanner.ScanRecord;
import org.apache.fluss.client.table.scanner.log.LogScanner;
import org.apache.fluss.client.table.scanner.log.ScanRecords;
import org.apache.fluss.client.table.writer.AppendWriter;
import org.apache.fluss.client.table.writer.UpsertWriter;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.DatabaseDescriptor;
import org.apache.fluss.metadata.Schema;
import org.apache.fluss.metadata.TableDescriptor;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.row.BinaryString;
import org.apache.fluss.row.GenericRow;
import org.apache.fluss.types.DataTypes;

/**
 * The Java-client half of `make bench-clients` (docs/benchmarks.md): drives the released
 * fluss-client through the workloads the Go client runs in internal/bench/compare
 * (append, scan, upsert, lookup) and prints one JSON object per workload on stdout.
 *
 * <p>Rows are the ones `strom bench` generates: column 0 "id" BIGINT, odd columns STRING of
 * --string-bytes bytes cut from a pool of pseudo-random words, even columns BIGINT below one
 * million, all from the same SplitMix64 sequence, so both clients write identical bytes.
 * Everything uses the client's public API the way an application would: one row per
 * append/upsert call, then flush; lookups through the async Lookuper with a fixed number in
 * flight.
 */
public final class Main {
    private static final long GOLDEN = 0x9e3779b97f4a7c15L;
    private static final int POOL_SIZE = 1 << 20;

    private String bootstrap = "127.0.0.1:9123";
    private int rows = 1_000_000;
    private int columns = 10;
    private int stringBytes = 16;
    private int buckets = 4;
    private int concurrency = 4;
    private int lookups = 100_000;
    private String batchSize = "128kb";
    private String lookupBatchTimeout = "";
    private String modes = "append,scan,upsert,lookup";
    private double maxSeconds = 120;
    private String database = "clientbench";
    private long seed = 1;

    private byte[] pool;

    public static void main(String[] args) throws Exception {
        Main m = new Main();
        m.parse(args);
        try {
            m.run();
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
        // fluss-client leaves non-daemon threads behind after close on some paths.
        System.exit(0);
    }

    private void parse(String[] args) {
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("flag " + a + " needs a value");
            }
            String v = args[++i];
            switch (a) {
                case "--bootstrap": bootstrap = v; break;
                case "--rows": rows = Integer.parseInt(v); break;
                case "--columns": columns = Integer.parseInt(v); break;
                case "--string-bytes": stringBytes = Integer.parseInt(v); break;
                case "--buckets": buckets = Integer.parseInt(v); break;
                case "--concurrency": concurrency = Integer.parseInt(v); break;
                case "--lookups": lookups = Integer.parseInt(v); break;
                case "--batch-size": batchSize = v; break;
                case "--lookup-batch-timeout": lookupBatchTimeout = v; break;
                case "--modes": modes = v; break;
                case "--max-seconds": maxSeconds = Double.parseDouble(v); break;
                case "--database": database = v; break;
                case "--seed": seed = Long.parseLong(v); break;
                default: throw new IllegalArgumentException("unknown flag " + a);
            }
        }
        if (rows < 1 || columns < 1 || buckets < 1 || concurrency < 1 || lookups < 1) {
            throw new IllegalArgumentException("rows, columns, buckets, concurrency and lookups must be positive");
        }
    }

    private Configuration clientConfig() {
        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", bootstrap);
        conf.setString("client.writer.batch-size", batchSize);
        if (!lookupBatchTimeout.isEmpty()) {
            conf.setString("client.lookup.batch-timeout", lookupBatchTimeout);
        }
        return conf;
    }

    private void run() throws Exception {
        List<String> todo = Arrays.asList(modes.split(","));
        buildPool();
        try (Connection conn = ConnectionFactory.createConnection(clientConfig());
                Admin admin = conn.getAdmin()) {
            admin.createDatabase(database, DatabaseDescriptor.EMPTY, true).get();
            TablePath logPath = TablePath.of(database, "java_log");
            TablePath kvPath = TablePath.of(database, "java_kv");
            if (todo.contains("append") || todo.contains("scan")) {
                admin.createTable(logPath, descriptor(false), true).get();
                try (Table t = conn.getTable(logPath)) {
                    long cpu = cpuNanos();
                    emit(append(t), cpu);
                    if (todo.contains("scan")) {
                        cpu = cpuNanos();
                        emit(scan(t), cpu);
                    }
                }
            }
            if (todo.contains("upsert") || todo.contains("lookup")) {
                admin.createTable(kvPath, descriptor(true), true).get();
                try (Table t = conn.getTable(kvPath)) {
                    long cpu = cpuNanos();
                    emit(upsert(t), cpu);
                    if (todo.contains("lookup")) {
                        cpu = cpuNanos();
                        emit(lookup(t), cpu);
                    }
                }
            }
        }
    }

    private TableDescriptor descriptor(boolean pk) {
        Schema.Builder sb = Schema.newBuilder().column("id", DataTypes.BIGINT().copy(false));
        for (int i = 1; i < columns; i++) {
            if (isString(i)) {
                sb.column("s" + i, DataTypes.STRING());
            } else {
                sb.column("v" + i, DataTypes.BIGINT());
            }
        }
        // Uncompressed Arrow batches, as `strom bench` writes (the default, ZSTD, would make
        // both clients spend most of their time compressing).
        TableDescriptor.Builder tb = TableDescriptor.builder()
                .property("table.log.arrow.compression.type", "NONE");
        if (pk) {
            sb.primaryKey("id");
            return tb.schema(sb.build()).distributedBy(buckets, "id").build();
        }
        return tb.schema(sb.build()).distributedBy(buckets).build();
    }

    private boolean isString(int col) {
        return col > 0 && stringBytes > 0 && col % 2 == 1;
    }

    // --- data: the same sequence as internal/bench/data.go -------------------------------

    private static long splitmix(long[] s) {
        s[0] += GOLDEN;
        long z = s[0];
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    private void buildPool() {
        if (stringBytes == 0) {
            return;
        }
        String alphabet = "abcdefghijklmnopqrstuvwxyz";
        long[] s = {seed ^ 0x5bd1e995L};
        byte[][] words = new byte[512][];
        for (int i = 0; i < words.length; i++) {
            byte[] w = new byte[(int) (3 + Long.remainderUnsigned(splitmix(s), 8))];
            for (int j = 0; j < w.length; j++) {
                w[j] = (byte) alphabet.charAt((int) Long.remainderUnsigned(splitmix(s), alphabet.length()));
            }
            words[i] = w;
        }
        int need = POOL_SIZE + stringBytes;
        byte[] buf = new byte[need + 32];
        int n = 0;
        while (n < need) {
            byte[] w = words[(int) Long.remainderUnsigned(splitmix(s), words.length)];
            System.arraycopy(w, 0, buf, n, w.length);
            n += w.length;
            buf[n++] = ' ';
        }
        pool = buf;
    }

    private GenericRow row(long id) {
        long[] s = {seed * GOLDEN ^ id};
        GenericRow r = new GenericRow(columns);
        r.setField(0, id);
        for (int i = 1; i < columns; i++) {
            long x = splitmix(s);
            if (isString(i)) {
                int off = (int) Long.remainderUnsigned(x, POOL_SIZE);
                r.setField(i, BinaryString.fromBytes(pool, off, stringBytes));
            } else {
                r.setField(i, Long.remainderUnsigned(x, 1_000_000));
            }
        }
        return r;
    }

    // --- workloads ------------------------------------------------------------------------

    private Result append(Table t) throws Exception {
        AppendWriter w = t.newAppend().createWriter();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        long start = System.nanoTime();
        for (long id = 0; id < rows; id++) {
            CompletableFuture<?> f = w.append(row(id));
            if (id % 1000 == 999) {
                f.whenComplete((r, e) -> { if (e != null) failed.compareAndSet(null, e); });
            }
        }
        w.flush();
        long end = System.nanoTime();
        check(failed, "append");
        return Result.throughput("append", rows, end - start);
    }

    private Result upsert(Table t) throws Exception {
        UpsertWriter w = t.newUpsert().createWriter();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        long start = System.nanoTime();
        for (long id = 0; id < rows; id++) {
            CompletableFuture<?> f = w.upsert(row(id));
            if (id % 1000 == 999) {
                f.whenComplete((r, e) -> { if (e != null) failed.compareAndSet(null, e); });
            }
        }
        w.flush();
        long end = System.nanoTime();
        check(failed, "upsert");
        return Result.throughput("upsert", rows, end - start);
    }

    private Result scan(Table t) throws Exception {
        long read = 0;
        long sum = 0;
        long start = System.nanoTime();
        long deadline = start + (long) (maxSeconds * 1e9);
        try (LogScanner sc = t.newScan().createLogScanner()) {
            for (int b = 0; b < buckets; b++) {
                sc.subscribeFromBeginning(b);
            }
            while (read < rows) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("scan: " + read + " of " + rows + " rows after " + maxSeconds + "s");
                }
                ScanRecords recs = sc.poll(Duration.ofSeconds(1));
                for (ScanRecord r : recs) {
                    sum += r.getRow().getLong(0); // touch every row, as an application would
                    read++;
                }
            }
        }
        long end = System.nanoTime();
        if (sum < 0) {
            throw new IllegalStateException("impossible id sum " + sum);
        }
        return Result.throughput("scan", read, end - start);
    }

    private Result lookup(Table t) throws Exception {
        Lookuper lk = t.newLookup().createLookuper();
        long[] latencies = new long[lookups];
        Semaphore slots = new Semaphore(concurrency);
        AtomicReference<Throwable> failed = new AtomicReference<>();
        AtomicLong misses = new AtomicLong();
        long[] s = {seed ^ 0xdeadbeefL};
        long start = System.nanoTime();
        long deadline = start + (long) (maxSeconds * 1e9);
        int issued = 0;
        boolean truncated = false;
        for (; issued < lookups; issued++) {
            if (System.nanoTime() > deadline) {
                truncated = true;
                break;
            }
            slots.acquire();
            if (failed.get() != null) {
                break;
            }
            long id = Long.remainderUnsigned(splitmix(s), rows);
            GenericRow key = new GenericRow(1);
            key.setField(0, id);
            final int i = issued;
            final long t0 = System.nanoTime();
            lk.lookup(key).whenComplete((r, e) -> {
                latencies[i] = System.nanoTime() - t0;
                if (e != null) {
                    failed.compareAndSet(null, e);
                } else if (r.getSingletonRow() == null) {
                    misses.incrementAndGet();
                }
                slots.release();
            });
        }
        if (!slots.tryAcquire(concurrency, 60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("lookups still in flight after 60s");
        }
        long end = System.nanoTime();
        check(failed, "lookup");
        Result r = Result.throughput("lookup", issued, end - start);
        r.qps = r.rowsPerSec;
        long[] done = Arrays.copyOf(latencies, issued);
        Arrays.sort(done);
        r.p50Ms = percentile(done, 0.50);
        r.p99Ms = percentile(done, 0.99);
        r.maxMs = done.length == 0 ? 0 : done[done.length - 1] / 1e6;
        r.misses = misses.get();
        r.truncated = truncated;
        return r;
    }

    private static double percentile(long[] sorted, double q) {
        if (sorted.length == 0) {
            return 0;
        }
        int i = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(i, sorted.length - 1))] / 1e6;
    }

    private static void check(AtomicReference<Throwable> failed, String what) {
        Throwable e = failed.get();
        if (e != null) {
            throw new IllegalStateException(what + " failed", e);
        }
    }

    /** The CPU time (user + system, all threads: JIT and GC included) of this process. */
    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /** Prints r with the process CPU time spent since cpuBefore. */
    private static void emit(Result r, long cpuBefore) {
        r.cpuSeconds = (cpuNanos() - cpuBefore) / 1e9;
        System.out.println(r.json());
        System.out.flush();
    }

    /** One workload's outcome; the JSON field names are the ones internal/bench/compare parses. */
    static final class Result {
        String mode;
        long rows;
        double seconds;
        double rowsPerSec;
        double qps;
        double p50Ms;
        double p99Ms;
        double maxMs;
        long misses;
        boolean truncated;
        double cpuSeconds;

        static Result throughput(String mode, long rows, long nanos) {
            Result r = new Result();
            r.mode = mode;
            r.rows = rows;
            r.seconds = nanos / 1e9;
            r.rowsPerSec = r.seconds > 0 ? rows / r.seconds : 0;
            return r;
        }

        String json() {
            List<String> f = new ArrayList<>();
            f.add("\"client\":\"java\"");
            f.add("\"mode\":\"" + mode + "\"");
            f.add("\"rows\":" + rows);
            f.add(String.format(Locale.ROOT, "\"seconds\":%.6f", seconds));
            f.add(String.format(Locale.ROOT, "\"rows_per_sec\":%.1f", rowsPerSec));
            f.add(String.format(Locale.ROOT, "\"cpu_s\":%.4f", cpuSeconds));
            if (qps > 0) {
                f.add(String.format(Locale.ROOT, "\"qps\":%.1f", qps));
                f.add(String.format(Locale.ROOT, "\"p50_ms\":%.4f", p50Ms));
                f.add(String.format(Locale.ROOT, "\"p99_ms\":%.4f", p99Ms));
                f.add(String.format(Locale.ROOT, "\"max_ms\":%.4f", maxMs));
                f.add("\"misses\":" + misses);
            }
            if (truncated) {
                f.add("\"truncated\":true");
            }
            return "{" + String.join(",", f) + "}";
        }
    }
}
