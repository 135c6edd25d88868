package dev.strom.javaremote;

import java.io.File;
import java.time.Duration;
import java.util.BitSet;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.admin.Admin;
import org.apache.fluss.client.table.Table;
import org.apache.fluss.client.table.scanner.ScanRecord;
import org.apache.fluss.client.table.scanner.log.LogScanner;
import org.apache.fluss.client.table.scanner.log.ScanRecords;
import org.apache.fluss.client.table.writer.AppendWriter;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.DatabaseDescriptor;
import org.apache.fluss.metadata.Schema;
import org.apache.fluss.metadata.TableDescriptor;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.row.BinaryString;
import org.apache.fluss.row.GenericRow;
import org.apache.fluss.types.DataTypes;

/**
 * The released Java client (fluss-client 0.9.1) reads a log table whose old segments a Strom
 * server tiered to remote storage (docs/tiered-storage.md): it appends rows, waits until each
 * bucket's tablet directory holds only its active segment, then scans from the beginning and
 * checks that every row arrives exactly once. Arguments: bootstrap address, the server's data
 * directory, rows, and where the tiered segments are counted: remote.data.dir for a file store,
 * or for an S3 store an unsigned ListObjects URL of the S3 emulator (http://host:port/bucket?prefix=p/;
 * tests/javaremote/s3emu checks no signatures). Exit status 0 on success.
 */
public final class TieredRead {
    private static final int BUCKETS = 2;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        File dataDir = new File(args[1]);
        int rows = Integer.parseInt(args[2]);
        String remoteDir = args[3];
        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", bootstrap);
        try (Connection conn = ConnectionFactory.createConnection(conf); Admin admin = conn.getAdmin()) {
            admin.createDatabase("java_remote", DatabaseDescriptor.EMPTY, true).get();
            TablePath path = TablePath.of("java_remote", "tiered");
            Schema schema = Schema.newBuilder().column("id", DataTypes.BIGINT()).column("s", DataTypes.STRING()).build();
            admin.createTable(path, TableDescriptor.builder().schema(schema).distributedBy(BUCKETS)
                    .property("table.log.tiered.local-segments", "1")
                    .property("table.log.arrow.compression.type", "NONE").build(), false).get();
            long tableId = admin.getTableInfo(path).get().getTableId();
            try (Table t = conn.getTable(path)) {
                AppendWriter w = t.newAppend().createWriter();
                AtomicReference<Throwable> failed = new AtomicReference<>();
                Random rnd = new Random(1);
                for (long id = 0; id < rows; id++) {
                    StringBuilder sb = new StringBuilder(200);
                    for (int i = 0; i < 200; i++) {
                        sb.append((char) ('a' + rnd.nextInt(26)));
                    }
                    CompletableFuture<?> f = w.append(GenericRow.of(id, BinaryString.fromString(sb.toString())));
                    f.whenComplete((r, e) -> { if (e != null) failed.compareAndSet(null, e); });
                }
                w.flush();
                if (failed.get() != null) {
                    throw new IllegalStateException("append failed", failed.get());
                }
                waitTiered(new File(dataDir, "tablet/table-" + tableId));
                int remote = remoteDir.startsWith("http://") ? countS3Logs(remoteDir) : countLogs(new File(remoteDir));
                if (remote < 2 * BUCKETS) {
                    throw new IllegalStateException(remote + " segments in remote storage: too few to test tiered reads");
                }
                check(t, rows);
            }
        }
        System.out.println("OK: the Java client read all " + rows + " rows once, the tiered ones from remote storage");
    }

    /** Counts the .log objects a ListObjects answer names (the first 1000 keys: enough here). */
    private static int countS3Logs(String listUrl) throws Exception {
        java.net.HttpURLConnection c = (java.net.HttpURLConnection) new java.net.URL(listUrl).openConnection();
        String body;
        try (java.io.InputStream in = c.getInputStream()) {
            body = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        }
        int n = 0;
        for (int i = body.indexOf(".log</Key>"); i >= 0; i = body.indexOf(".log</Key>", i + 1)) {
            n++;
        }
        return n;
    }

    private static int countLogs(File dir) {
        File[] files = dir.listFiles();
        int n = 0;
        for (File f : files == null ? new File[0] : files) {
            n += f.isDirectory() ? countLogs(f) : f.getName().endsWith(".log") ? 1 : 0;
        }
        return n;
    }

    /** Waits until every bucket directory holds one .log file (the active segment). */
    private static void waitTiered(File tableDir) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (true) {
            boolean done = true;
            StringBuilder state = new StringBuilder();
            for (int b = 0; b < BUCKETS; b++) {
                File[] logs = new File(tableDir, "bucket-" + b).listFiles((d, n) -> n.endsWith(".log"));
                int n = logs == null ? -1 : logs.length;
                state.append(" bucket ").append(b).append(": ").append(n);
                done &= n == 1;
            }
            if (done) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("local segments left after 90 s:" + state);
            }
            Thread.sleep(200);
        }
    }

    private static void check(Table t, int rows) throws Exception {
        BitSet seen = new BitSet(rows);
        long read = 0;
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        try (LogScanner sc = t.newScan().createLogScanner()) {
            for (int b = 0; b < BUCKETS; b++) {
                sc.subscribeFromBeginning(b);
            }
            // Until every row was read, then two more polls: a row read twice shows up there.
            int extra = 2;
            while (read < rows || extra-- > 0) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("read " + read + " of " + rows + " rows in 120 s");
                }
                ScanRecords recs = sc.poll(Duration.ofSeconds(1));
                for (ScanRecord r : recs) {
                    int id = (int) r.getRow().getLong(0);
                    if (id < 0 || id >= rows || seen.get(id)) {
                        throw new IllegalStateException("row " + id + " read twice or unknown");
                    }
                    seen.set(id);
                    read++;
                }
            }
        }
        if (seen.cardinality() != rows) {
            throw new IllegalStateException("read " + seen.cardinality() + " of " + rows + " rows");
        }
    }
}
