package dev.strom.flinkcheck;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs Flink SQL checks (the items of issue 10) against a Fluss-protocol server and prints one
 * {@code PASS name} or {@code FAIL name: reason} line per check, then a closing
 * {@code N passed, N failed} line. Usage: {@code FlinkCheck BOOTSTRAP [CHECK...]}; with check
 * names only those run (a check that needs tables of an earlier one runs that one first, see
 * {@link #needs}).
 *
 * <p>Every check has a time limit: a streaming read that hangs (the way a partitioned primary-key
 * table once did) is cancelled and reported as FAIL instead of blocking the run. Tables live in
 * one database per run, so a run never sees another run's rows.
 */
public final class FlinkCheck {

    /** A check throws (or returns normally for PASS). */
    interface Body {
        void run() throws Exception;
    }

    record Check(String name, String item, Body body) {}

    private static final long CHECK_TIMEOUT_SECONDS =
            Long.getLong("flinkcheck.timeout", 60L);

    private final String bootstrap;
    private final String db;
    private TableEnvironment stream;
    private TableEnvironment batch;
    private final List<Check> checks = new ArrayList<>();
    private final java.util.Set<String> done = new java.util.HashSet<>();

    FlinkCheck(String bootstrap) {
        this.bootstrap = bootstrap;
        this.db = "flinkcheck_" + Long.toString(System.currentTimeMillis(), 36);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: FlinkCheck BOOTSTRAP_SERVERS [CHECK...]");
            System.exit(2);
        }
        FlinkCheck fc = new FlinkCheck(args[0]);
        fc.define();
        List<String> only = Arrays.asList(args).subList(1, args.length);
        int failed = fc.runAll(only);
        System.exit(failed == 0 ? 0 : 1);
    }

    // ------------------------------------------------------------------ environments

    private static TableEnvironment newEnv(boolean streaming) {
        Configuration conf = new Configuration();
        conf.set(RestOptions.BIND_PORT, "0"); // the MiniCluster's REST endpoint: any free port
        conf.setString("parallelism.default", "1");
        conf.setString("table.dml-sync", "false");
        EnvironmentSettings.Builder b = EnvironmentSettings.newInstance().withConfiguration(conf);
        return TableEnvironment.create(streaming ? b.inStreamingMode().build() : b.inBatchMode().build());
    }

    private void useCatalog(TableEnvironment env) {
        env.executeSql(
                "CREATE CATALOG fluss WITH ('type'='fluss', 'bootstrap.servers'='" + bootstrap + "')");
        env.executeSql("USE CATALOG fluss");
    }

    // ------------------------------------------------------------------ helpers

    /** Runs a DDL or DML statement and waits for its job (INSERT) to finish. */
    private static void exec(TableEnvironment env, String sql) throws Exception {
        TableResult r = env.executeSql(sql);
        Optional<JobClient> job = r.getJobClient();
        if (job.isPresent()) {
            job.get().getJobExecutionResult().get(CHECK_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
    }

    /**
     * Collects exactly {@code n} rows of a (possibly unbounded) query, then cancels it. A query
     * that has not produced them within {@code seconds} is cancelled and reported as hanging.
     */
    private static List<String> take(TableEnvironment env, String sql, int n, long seconds)
            throws Exception {
        return take(env, sql, n, seconds, false);
    }

    /** As above; with {@code partialOk} a timeout returns the rows read so far. */
    private static List<String> take(TableEnvironment env, String sql, int n, long seconds,
            boolean partialOk) throws Exception {
        TableResult r = env.executeSql(sql);
        List<String> rows = new ArrayList<>();
        java.util.concurrent.atomic.AtomicBoolean timedOut = new java.util.concurrent.atomic.AtomicBoolean();
        // Calcite keeps planner state in thread locals, so every statement runs on the main
        // thread; a watchdog cancels the job to unblock a hanging iterator.
        ScheduledFuture<?> watchdog = WATCHDOG.schedule(() -> {
            timedOut.set(true);
            r.getJobClient().ifPresent(JobClient::cancel);
        }, seconds, TimeUnit.SECONDS);
        try (CloseableIterator<Row> it = r.collect()) {
            while ((n < 0 || rows.size() < n) && it.hasNext()) {
                rows.add(it.next().toString());
            }
        } catch (Exception e) {
            if (timedOut.get() && partialOk) {
                return rows;
            }
            if (timedOut.get()) {
                throw new TimeoutException("query hangs: " + rows.size() + " of "
                        + (n < 0 ? "all" : n) + " rows after " + seconds + " s, rows " + rows);
            }
            throw e;
        } finally {
            watchdog.cancel(false);
        }
        if (timedOut.get() && n >= 0 && rows.size() < n && !partialOk) {
            throw new TimeoutException("query hangs: " + rows.size() + " of " + n
                    + " rows after " + seconds + " s, rows " + rows);
        }
        return rows;
    }

    /** Collects every row of a bounded query. */
    private static List<String> all(TableEnvironment env, String sql) throws Exception {
        return take(env, sql, -1, CHECK_TIMEOUT_SECONDS);
    }

    private static void expectSame(List<String> got, String... want) {
        List<String> g = new ArrayList<>(got);
        List<String> w = new ArrayList<>(Arrays.asList(want));
        Collections.sort(g);
        Collections.sort(w);
        if (!g.equals(w)) {
            throw new AssertionError("rows " + g + ", want " + w);
        }
    }

    /** Streaming read of {@code n} rows; a hang (fewer rows than expected) becomes a timeout. */
    private List<String> streamRows(String sql, int n) throws Exception {
        return take(stream, sql, n, CHECK_TIMEOUT_SECONDS);
    }

    // ------------------------------------------------------------------ the checks

    private void add(String name, String item, Body body) {
        checks.add(new Check(name, item, body));
    }

    /** Prerequisites: a check that reads a table needs the check that wrote it. */
    private static List<String> needs(String name) {
        return switch (name) {
            case "log_earliest", "log_full", "log_batch_count", "log_batch_limit", "alter_add_column",
                    "alter_set_option", "lookup_join" -> List.of("catalog", "log_insert", "pk_insert");
            case "pk_earliest", "pk_full", "pk_batch_count", "pk_point_query" ->
                    List.of("catalog", "pk_insert");
            case "log_insert", "pk_insert", "partitioned_pk", "alter_add_column_pk", "pk_update_delete" ->
                    List.of("catalog");
            case "pk_trimmed_full", "log_trimmed_earliest" -> List.of("catalog", "pk_trimmed_setup");
            case "pk_trimmed_setup", "lake_setup", "lake_partitioned", "kafka_produced",
                    "log_remote_earliest" -> List.of("catalog");
            case "lake_log_read", "lake_pk_read", "lake_union_batch", "lake_union_stream_log",
                    "lake_union_stream_pk" -> List.of("catalog", "lake_setup");
            default -> List.of();
        };
    }

    void define() {
        add("catalog", "catalog/DDL", () -> {
            exec(stream, "CREATE DATABASE " + db);
            exec(stream, "USE " + db);
            exec(batch, "USE " + db);
            List<String> dbs = all(stream, "SHOW DATABASES");
            if (!dbs.contains("+I[" + db + "]")) {
                throw new AssertionError("SHOW DATABASES " + dbs + " lacks " + db);
            }
            exec(stream, "CREATE TABLE log_t (id INT, name STRING) WITH ('bucket.num'='2')");
            exec(stream,
                    "CREATE TABLE pk_t (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED)"
                            + " WITH ('bucket.num'='2')");
            expectSame(all(stream, "SHOW TABLES"), "+I[log_t]", "+I[pk_t]");
            String ddl = all(stream, "SHOW CREATE TABLE pk_t").toString();
            if (!ddl.contains("PRIMARY KEY")) {
                throw new AssertionError("SHOW CREATE TABLE: " + ddl);
            }
        });
        add("log_insert", "log table write", () ->
                exec(stream, "INSERT INTO log_t VALUES (1, 'a'), (2, 'b'), (3, 'c')"));
        add("pk_insert", "PK table write (upsert)", () -> {
            exec(stream, "INSERT INTO pk_t VALUES (1, 'a'), (2, 'b'), (3, 'c')");
            exec(stream, "INSERT INTO pk_t VALUES (1, 'a2')");
        });
        add("log_earliest", "log table, earliest", () -> expectSame(
                streamRows("SELECT * FROM log_t /*+ OPTIONS('scan.startup.mode'='earliest') */", 3),
                "+I[1, a]", "+I[2, b]", "+I[3, c]"));
        add("log_full", "log table, full (default)", () -> expectSame(
                streamRows("SELECT * FROM log_t", 3), "+I[1, a]", "+I[2, b]", "+I[3, c]"));
        add("pk_earliest", "PK table, earliest (changelog)", () -> expectSame(
                streamRows("SELECT * FROM pk_t /*+ OPTIONS('scan.startup.mode'='earliest') */", 5),
                "+I[1, a]", "+I[2, b]", "+I[3, c]", "-U[1, a]", "+U[1, a2]"));
        add("pk_full", "PK table, full (default: KV snapshot + changelog)", () -> expectSame(
                streamRows("SELECT * FROM pk_t", 3), "+I[1, a2]", "+I[2, b]", "+I[3, c]"));
        add("log_batch_count", "batch COUNT(*) on a log table", () -> expectSame(
                all(batch, "SELECT COUNT(*) FROM log_t"), "+I[3]"));
        add("pk_batch_count", "batch COUNT(*) on a PK table", () -> expectSame(
                all(batch, "SELECT COUNT(*) FROM pk_t"), "+I[3]"));
        add("log_batch_limit", "batch SELECT ... LIMIT on a log table", () -> {
            List<String> rows = all(batch, "SELECT * FROM log_t LIMIT 2");
            if (rows.size() != 2) {
                throw new AssertionError("rows " + rows + ", want 2 rows");
            }
        });
        add("pk_point_query", "batch point query on a PK table", () -> expectSame(
                all(batch, "SELECT * FROM pk_t WHERE id = 1"), "+I[1, a2]"));
        add("lookup_join", "lookup join", () -> {
            exec(stream, "CREATE TEMPORARY VIEW log_v AS SELECT id, name, PROCTIME() AS ptime"
                    + " FROM log_t /*+ OPTIONS('scan.startup.mode'='earliest') */");
            expectSame(streamRows("SELECT l.id, l.name, d.name FROM log_v AS l"
                            + " LEFT JOIN pk_t FOR SYSTEM_TIME AS OF l.ptime AS d ON l.id = d.id", 3),
                    "+I[1, a, a2]", "+I[2, b, b]", "+I[3, c, c]");
        });
        add("partitioned_pk", "partitioned PK table (write, earliest, full)", () -> {
            exec(stream, "CREATE TABLE ppk_t (id INT, dt STRING, v STRING,"
                    + " PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) WITH ('bucket.num'='1')");
            exec(stream, "INSERT INTO ppk_t VALUES (1, '2026', 'x'), (2, '2027', 'y'), (1, '2026', 'x2')");
            List<String> failures = new ArrayList<>();
            try {
                expectSame(streamRows("SELECT * FROM ppk_t /*+ OPTIONS('scan.startup.mode'='earliest') */", 4),
                        "+I[1, 2026, x]", "-U[1, 2026, x]", "+U[1, 2026, x2]", "+I[2, 2027, y]");
            } catch (Throwable t) {
                failures.add("earliest: " + describe(t));
            }
            try {
                expectSame(take(stream, "SELECT * FROM ppk_t", 2, 30),
                        "+I[1, 2026, x2]", "+I[2, 2027, y]");
            } catch (Throwable t) {
                failures.add("full: " + describe(t));
            }
            if (!failures.isEmpty()) {
                throw new AssertionError(String.join("; ", failures));
            }
        });
        add("alter_set_option", "ALTER TABLE ... SET", () -> {
            exec(stream, "ALTER TABLE log_t SET ('table.log.ttl' = '3d', 'owner' = 'flinkcheck')");
            String ddl = all(stream, "SHOW CREATE TABLE log_t").toString();
            if (!ddl.contains("'table.log.ttl' = '3d'") || !ddl.contains("'owner' = 'flinkcheck'")) {
                throw new AssertionError("SHOW CREATE TABLE after SET: " + ddl);
            }
            exec(stream, "ALTER TABLE log_t RESET ('owner')");
            ddl = all(stream, "SHOW CREATE TABLE log_t").toString();
            if (ddl.contains("'owner'")) {
                throw new AssertionError("SHOW CREATE TABLE after RESET: " + ddl);
            }
        });
        add("alter_add_column", "ALTER TABLE ... ADD COLUMN", () -> {
            exec(stream, "CREATE TABLE evo_t (id INT, name STRING)");
            exec(stream, "INSERT INTO evo_t VALUES (1, 'a')");
            exec(stream, "ALTER TABLE evo_t ADD extra STRING");
            exec(stream, "INSERT INTO evo_t VALUES (2, 'b', 'e')");
            expectSame(streamRows("SELECT * FROM evo_t /*+ OPTIONS('scan.startup.mode'='earliest') */", 2),
                    "+I[1, a, null]", "+I[2, b, e]");
        });
        add("alter_add_column_pk", "ALTER TABLE ... ADD COLUMN on a PK table", () -> {
            exec(stream, "CREATE TABLE evo_pk_t (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED)");
            exec(stream, "INSERT INTO evo_pk_t VALUES (1, 'a'), (3, 'c')");
            exec(stream, "ALTER TABLE evo_pk_t ADD extra STRING");
            exec(stream, "INSERT INTO evo_pk_t VALUES (2, 'b', 'e'), (1, 'a2', 'x')");
            // id 3 was stored under the old schema: lookups must return it in the new shape.
            expectSame(all(batch, "SELECT * FROM evo_pk_t WHERE id = 3"), "+I[3, c, null]");
            expectSame(all(batch, "SELECT * FROM evo_pk_t WHERE id = 1"), "+I[1, a2, x]");
            expectSame(streamRows("SELECT * FROM evo_pk_t /*+ OPTIONS('scan.startup.mode'='earliest') */", 5),
                    "+I[1, a, null]", "+I[3, c, null]", "+I[2, b, e]", "-U[1, a, null]", "+U[1, a2, x]");
        });
        add("pk_update_delete", "UPDATE / DELETE on a PK table", () -> {
            exec(stream, "CREATE TABLE ud_t (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED)");
            exec(stream, "INSERT INTO ud_t VALUES (1, 'a'), (2, 'b')");
            exec(batch, "UPDATE ud_t SET name = 'z' WHERE id = 1");
            exec(batch, "DELETE FROM ud_t WHERE id = 2");
            expectSame(all(batch, "SELECT * FROM ud_t WHERE id = 1"), "+I[1, z]");
            expectSame(all(batch, "SELECT * FROM ud_t WHERE id = 2"));
            expectSame(streamRows("SELECT * FROM ud_t /*+ OPTIONS('scan.startup.mode'='earliest') */", 5),
                    "+I[1, a]", "+I[2, b]", "-U[1, a]", "+U[1, z]", "-D[2, b]");
        });
        defineTrimmed();
        defineLake();
        defineKafkaAndRemote();
    }

    /** Rows {@code (id, v)} for ids from..to, each value long enough that a batch fills a segment. */
    private static String valuesRows(int from, int to, String tag) {
        StringBuilder sb = new StringBuilder();
        // Values that do not compress (the changelog batches are compressed), from a fixed seed.
        java.util.Random random = new java.util.Random(from * 31L + to);
        for (int i = from; i <= to; i++) {
            StringBuilder pad = new StringBuilder();
            while (pad.length() < 100) {
                pad.append(Long.toHexString(random.nextLong()));
            }
            sb.append(i == from ? "" : ", ").append("(").append(i).append(", '").append(tag).append(pad).append("')");
        }
        return sb.toString();
    }

    /** The trimmed-changelog checks: keys 1..50 written, then 1..5 updated, old segments dropped. */
    private void defineTrimmed() {
        add("pk_trimmed_setup", "PK and log tables whose changelog retention trimmed", () -> {
            exec(stream, "CREATE TABLE trim_t (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED)"
                    + " WITH ('bucket.num'='1', 'table.log.ttl'='1s')");
            exec(stream, "CREATE TABLE trim_log_t (id INT, v STRING)"
                    + " WITH ('bucket.num'='1', 'table.log.ttl'='1s')");
            exec(stream, "INSERT INTO trim_t VALUES " + valuesRows(1, 50, "a"));
            exec(stream, "INSERT INTO trim_log_t VALUES " + valuesRows(1, 50, "a"));
            Thread.sleep(2500);
            exec(stream, "INSERT INTO trim_t VALUES " + valuesRows(1, 5, "b"));
            exec(stream, "INSERT INTO trim_log_t VALUES " + valuesRows(51, 55, "b"));
            Thread.sleep(1500);
            exec(stream, "INSERT INTO trim_t VALUES " + valuesRows(6, 6, "c"));
            exec(stream, "INSERT INTO trim_log_t VALUES " + valuesRows(56, 56, "c"));
            Thread.sleep(3000);
            // 50 inserts, 5 updates (-U/+U) and 1 more update: 62 changelog rows if nothing was trimmed.
            List<String> rows = take(stream,
                    "SELECT id FROM trim_t /*+ OPTIONS('scan.startup.mode'='earliest') */", 62, 15, true);
            if (rows.size() >= 62) {
                throw new AssertionError("precondition: retention trimmed nothing (62 changelog rows remain)");
            }
        });
        add("log_trimmed_earliest", "log table, earliest, after retention trimmed it", () -> {
            // Rows 1..56 were written in three batches; retention dropped the oldest segments, so
            // the read must start at the new log start offset: a suffix of 1..56 ending at 56.
            List<String> rows = take(stream,
                    "SELECT id FROM trim_log_t /*+ OPTIONS('scan.startup.mode'='earliest') */", 56, 15, true);
            if (rows.isEmpty() || rows.size() >= 56) {
                throw new AssertionError("want a trimmed suffix of 56 rows, got " + rows.size() + ": " + rows);
            }
            int first = 57 - rows.size();
            for (int i = 0; i < rows.size(); i++) {
                if (!rows.get(i).equals("+I[" + (first + i) + "]")) {
                    throw new AssertionError("rows are not the suffix " + first + "..56: " + rows);
                }
            }
        });
        add("pk_trimmed_full", "PK table, full, after the changelog was trimmed", () -> {
            List<String> rows = take(stream, "SELECT id, SUBSTRING(v, 1, 1) FROM trim_t", 50,
                    CHECK_TIMEOUT_SECONDS, false);
            List<String> want = new ArrayList<>();
            for (int i = 1; i <= 50; i++) {
                want.add("+I[" + i + ", " + (i <= 5 ? "b" : i == 6 ? "c" : "a") + "]");
            }
            expectSame(rows, want.toArray(new String[0]));
        });
    }

    // ------------------------------------------------------------------ the data lake

    /**
     * Flink's Iceberg catalog (inside the connector's $lake tables) takes the Fluss catalog's
     * name as the Iceberg catalog name, and a JDBC catalog only sees the rows stored under its
     * name: $lake reads go through a Fluss catalog named as the server's datalake.iceberg.name
     * (docs/lake.md).
     */
    private static final String LAKE_CATALOG = "`fluss-iceberg-catalog`";

    /** Waits until the table's latest lake snapshot holds every record the table's log has. */
    private void waitTiered(String table, int buckets, long seconds) throws Exception {
        org.apache.fluss.metadata.TablePath path = org.apache.fluss.metadata.TablePath.of(db, table);
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        String last = "no lake snapshot";
        try (org.apache.fluss.client.Connection conn = flussConnection()) {
            org.apache.fluss.client.admin.Admin admin = conn.getAdmin();
            List<Integer> ids = new ArrayList<>();
            for (int b = 0; b < buckets; b++) {
                ids.add(b);
            }
            while (System.nanoTime() < deadline) {
                java.util.Map<Integer, Long> ends = admin.listOffsets(path, ids,
                        new org.apache.fluss.client.admin.OffsetSpec.LatestSpec()).all().get();
                try {
                    org.apache.fluss.client.metadata.LakeSnapshot snap =
                            admin.getLatestLakeSnapshot(path).get();
                    java.util.Map<Integer, Long> tiered = new java.util.HashMap<>();
                    snap.getTableBucketsOffset().forEach((tb, off) -> tiered.put(tb.getBucket(), off));
                    boolean all = true;
                    for (int b : ids) {
                        all &= ends.get(b) == 0 || ends.get(b).equals(tiered.get(b));
                    }
                    if (all) {
                        return;
                    }
                    last = "snapshot " + snap.getSnapshotId() + " offsets " + tiered + ", log ends " + ends;
                } catch (java.util.concurrent.ExecutionException e) {
                    last = describe(e);
                }
                Thread.sleep(200);
            }
        }
        throw new TimeoutException(table + " not tiered after " + seconds + " s: " + last);
    }

    /**
     * Waits until the latest lake snapshot of a log table holds {@code rows} records in total
     * (one offset per record), over all partitions.
     */
    private long waitTieredRows(String table, long rows, long seconds) throws Exception {
        org.apache.fluss.metadata.TablePath path = org.apache.fluss.metadata.TablePath.of(db, table);
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        String last = "no lake snapshot";
        try (org.apache.fluss.client.Connection conn = flussConnection()) {
            org.apache.fluss.client.admin.Admin admin = conn.getAdmin();
            while (System.nanoTime() < deadline) {
                try {
                    org.apache.fluss.client.metadata.LakeSnapshot snap = admin.getLatestLakeSnapshot(path).get();
                    long sum = snap.getTableBucketsOffset().values().stream().mapToLong(Long::longValue).sum();
                    if (sum == rows) {
                        return snap.getSnapshotId();
                    }
                    last = "snapshot " + snap.getSnapshotId() + " offsets " + snap.getTableBucketsOffset();
                } catch (java.util.concurrent.ExecutionException e) {
                    last = describe(e);
                }
                Thread.sleep(200);
            }
        }
        throw new TimeoutException(table + ": " + rows + " rows not tiered after " + seconds + " s: " + last);
    }

    /** Fails unless some records of the table are in its log only (not in the lake snapshot). */
    private void expectUntieredTail(String table, int buckets) throws Exception {
        org.apache.fluss.metadata.TablePath path = org.apache.fluss.metadata.TablePath.of(db, table);
        try (org.apache.fluss.client.Connection conn = flussConnection()) {
            org.apache.fluss.client.admin.Admin admin = conn.getAdmin();
            List<Integer> ids = new ArrayList<>();
            for (int b = 0; b < buckets; b++) {
                ids.add(b);
            }
            java.util.Map<Integer, Long> ends = admin.listOffsets(path, ids,
                    new org.apache.fluss.client.admin.OffsetSpec.LatestSpec()).all().get();
            java.util.Map<Integer, Long> tiered = new java.util.HashMap<>();
            admin.getLatestLakeSnapshot(path).get().getTableBucketsOffset()
                    .forEach((tb, off) -> tiered.put(tb.getBucket(), off));
            long tail = 0;
            for (int b : ids) {
                tail += ends.get(b) - tiered.getOrDefault(b, 0L);
            }
            if (tail <= 0) {
                throw new AssertionError("precondition: " + table + " has no untiered records (lake "
                        + tiered + ", log ends " + ends + ")");
            }
        }
    }

    private org.apache.fluss.client.Connection flussConnection() {
        org.apache.fluss.config.Configuration conf = new org.apache.fluss.config.Configuration();
        conf.setString("bootstrap.servers", bootstrap);
        return org.apache.fluss.client.ConnectionFactory.createConnection(conf);
    }

    private boolean lakeCatalogCreated;

    /** Creates the Fluss catalog named as the Iceberg catalog, in both environments, once. */
    private void ensureLakeCatalog() throws Exception {
        if (!lakeCatalogCreated) {
            for (TableEnvironment env : List.of(stream, batch)) {
                exec(env, "CREATE CATALOG " + LAKE_CATALOG
                        + " WITH ('type'='fluss', 'bootstrap.servers'='" + bootstrap + "')");
            }
            lakeCatalogCreated = true;
        }
    }

    private String lakeTable(String table) {
        return LAKE_CATALOG + "." + db + ".`" + table + "$lake`";
    }

    /**
     * Tables tiered into Iceberg by the server (it runs with datalake.format=iceberg): a log and
     * a primary-key table, each with rows in Iceberg and then, with tiering slowed to once an
     * hour, a tail of rows in the Fluss log only, so union reads must join the two.
     */
    private void defineLake() {
        add("lake_setup", "lake-enabled log and PK tables, tiered, then an untiered tail", () -> {
            String with = " WITH ('bucket.num'='2', 'table.datalake.enabled'='true',"
                    + " 'table.datalake.freshness'='1s')";
            exec(stream, "CREATE TABLE lake_log (id INT, name STRING)" + with);
            exec(stream, "CREATE TABLE lake_pk (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED)" + with);
            // One job per statement set: Flink jobs are most of this check's time.
            exec(stream, "EXECUTE STATEMENT SET BEGIN"
                    + " INSERT INTO lake_log VALUES (1, 'a'), (2, 'b'), (3, 'c');"
                    + " INSERT INTO lake_pk VALUES (1, 'a'), (2, 'b'), (3, 'c'), (1, 'a2'); END");
            exec(batch, "DELETE FROM lake_pk WHERE id = 2");
            waitTiered("lake_log", 2, 30);
            waitTiered("lake_pk", 2, 30);
            ensureLakeCatalog();
            // One more round (at most 1 s away) reads the new freshness; later rows stay untiered.
            exec(stream, "ALTER TABLE lake_log SET ('table.datalake.freshness' = '1h')");
            exec(stream, "ALTER TABLE lake_pk SET ('table.datalake.freshness' = '1h')");
            Thread.sleep(2500);
            exec(stream, "EXECUTE STATEMENT SET BEGIN"
                    + " INSERT INTO lake_log VALUES (4, 'd'), (5, 'e');"
                    + " INSERT INTO lake_pk VALUES (3, 'c2'), (4, 'd'); END");
            expectUntieredTail("lake_log", 2);
            expectUntieredTail("lake_pk", 2);
        });
        add("lake_partitioned", "partitioned log table: $lake and union read (batch) per partition", () -> {
            exec(stream, "CREATE TABLE lake_part (id INT, dt STRING) PARTITIONED BY (dt) WITH ('bucket.num'='1',"
                    + " 'table.datalake.enabled'='true', 'table.datalake.freshness'='1s')");
            exec(stream, "INSERT INTO lake_part VALUES (1, '2026'), (2, '2027'), (3, '2026')");
            waitTieredRows("lake_part", 3, 30);
            ensureLakeCatalog();
            exec(stream, "ALTER TABLE lake_part SET ('table.datalake.freshness' = '1h')");
            Thread.sleep(2500);
            exec(stream, "INSERT INTO lake_part VALUES (4, '2027'), (5, '2028')");
            // Iceberg's identity partition value is the Fluss partition name: a wrong mapping
            // would read a partition's lake rows and its whole log, so rows would repeat.
            expectSame(all(batch, "SELECT id, dt FROM " + lakeTable("lake_part")),
                    "+I[1, 2026]", "+I[2, 2027]", "+I[3, 2026]");
            expectSame(all(batch, "SELECT id, dt FROM lake_part"),
                    "+I[1, 2026]", "+I[2, 2027]", "+I[3, 2026]", "+I[4, 2027]", "+I[5, 2028]");
        });
        add("lake_log_read", "$lake: a log table's rows in Iceberg, with the system columns", () -> {
            expectSame(all(batch, "SELECT id, name FROM " + lakeTable("lake_log")),
                    "+I[1, a]", "+I[2, b]", "+I[3, c]");
            List<String> sys = all(batch, "SELECT DISTINCT __bucket, __offset FROM " + lakeTable("lake_log")
                    + " WHERE __bucket IN (0, 1) AND __offset >= 0 AND __timestamp IS NOT NULL");
            if (sys.size() != 3) {
                throw new AssertionError("system columns: want 3 distinct (__bucket, __offset), got " + sys);
            }
        });
        add("lake_pk_read", "$lake: a PK table's current rows (Iceberg equality deletes applied)", () ->
                expectSame(all(batch, "SELECT id, name FROM " + lakeTable("lake_pk")),
                        "+I[1, a2]", "+I[3, c]"));
        add("lake_union_batch", "union read, batch: lake snapshot + log tail of a log table", () ->
                expectSame(all(batch, "SELECT id, name FROM lake_log"),
                        "+I[1, a]", "+I[2, b]", "+I[3, c]", "+I[4, d]", "+I[5, e]"));
        add("lake_union_stream_log", "union read, streaming: lake snapshot + log tail of a log table", () ->
                expectSame(streamRows("SELECT id, name FROM lake_log", 5),
                        "+I[1, a]", "+I[2, b]", "+I[3, c]", "+I[4, d]", "+I[5, e]"));
        add("lake_union_stream_pk", "union read, streaming: lake snapshot + changelog tail of a PK table", () ->
                // The lake holds 1 and 3 as of the snapshot; the changelog after it updates 3, adds 4.
                expectSame(streamRows("SELECT id, name FROM lake_pk", 5),
                        "+I[1, a2]", "+I[3, c]", "-U[3, c]", "+U[3, c2]", "+I[4, d]"));
    }

    // ------------------------------------------------------------------ Kafka and remote log

    /** A server option run.sh passes as a system property; the check fails without it. */
    private static String runOption(String name) {
        String v = System.getProperty("flinkcheck." + name, "");
        if (v.isEmpty()) {
            throw new IllegalStateException("-Dflinkcheck." + name + " is not set (tests/flink/run.sh sets it"
                    + " for the single-node server it starts)");
        }
        return v;
    }

    /**
     * Appends rows {@code (id, v)} for ids from..to with the Fluss Java client, flushing after
     * every {@code perBatch} rows (so each group is a batch of its own), and waits for every
     * acknowledgement. Values are ~100 characters that do not compress well.
     */
    private void appendPadded(String table, int from, int to, int perBatch) throws Exception {
        try (org.apache.fluss.client.Connection conn = flussConnection();
             org.apache.fluss.client.table.Table t = conn.getTable(org.apache.fluss.metadata.TablePath.of(db, table))) {
            org.apache.fluss.client.table.writer.AppendWriter w = t.newAppend().createWriter();
            java.util.Random random = new java.util.Random(from);
            List<java.util.concurrent.CompletableFuture<?>> acks = new ArrayList<>();
            for (int i = from; i <= to; i++) {
                StringBuilder pad = new StringBuilder("r");
                while (pad.length() < 100) {
                    pad.append(Long.toHexString(random.nextLong()));
                }
                acks.add(w.append(org.apache.fluss.row.GenericRow.of(i,
                        org.apache.fluss.row.BinaryString.fromString(pad.toString()))));
                if ((i - from + 1) % perBatch == 0) {
                    w.flush();
                }
            }
            w.flush();
            for (java.util.concurrent.CompletableFuture<?> f : acks) {
                f.get(CHECK_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            }
        }
    }

    private long tableId(String database, String table) throws Exception {
        try (org.apache.fluss.client.Connection conn = flussConnection()) {
            return conn.getAdmin().getTableInfo(org.apache.fluss.metadata.TablePath.of(database, table))
                    .get().getTableId();
        }
    }

    private static int countFiles(java.io.File dir, String suffix) {
        java.io.File[] files = dir.listFiles();
        int n = 0;
        for (java.io.File f : files == null ? new java.io.File[0] : files) {
            n += f.isDirectory() ? countFiles(f, suffix) : f.getName().endsWith(suffix) ? 1 : 0;
        }
        return n;
    }

    /**
     * Rows produced over Kafka (docs/kafka.md: topic {@code t} is the log table {@code kafka.t})
     * read with Flink SQL, and a log table whose first segments were tiered to remote.data.dir
     * and deleted locally (docs/tiered-storage.md) read from earliest.
     */
    private void defineKafkaAndRemote() {
        add("kafka_produced", "rows a Kafka producer wrote (idempotent, acks=all), read as the table kafka.<topic>", () -> {
            java.util.Properties props = new java.util.Properties();
            props.put("bootstrap.servers", runOption("kafka"));
            String topic = db + "_events";
            int partitions = 2;
            int n = 30;
            try (org.apache.kafka.clients.admin.Admin admin = org.apache.kafka.clients.admin.Admin.create(props)) {
                admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic(topic, partitions, (short) 1)))
                        .all().get(CHECK_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            }
            props.put("acks", "all");
            props.put("enable.idempotence", "true");
            props.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
            props.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
            long base = System.currentTimeMillis() - 60_000;
            List<String> want = new ArrayList<>();
            try (org.apache.kafka.clients.producer.KafkaProducer<byte[], byte[]> producer =
                         new org.apache.kafka.clients.producer.KafkaProducer<>(props)) {
                List<java.util.concurrent.Future<?>> acks = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    // The last record is a tombstone: a NULL value in the table.
                    byte[] value = i == n - 1 ? null : ("v" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8);
                    org.apache.kafka.clients.producer.ProducerRecord<byte[], byte[]> rec =
                            new org.apache.kafka.clients.producer.ProducerRecord<>(topic, i % partitions, base + i,
                                    ("k" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8), value);
                    rec.headers().add("i", Integer.toString(i).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                    rec.headers().add("src", "kafka".getBytes(java.nio.charset.StandardCharsets.UTF_8));
                    acks.add(producer.send(rec));
                    want.add("+I[k" + i + ", " + (value == null ? "null" : "v" + i) + ", 2, i, " + i + ", src, "
                            + java.time.Instant.ofEpochMilli(base + i) + "]");
                }
                producer.flush();
                for (java.util.concurrent.Future<?> f : acks) {
                    f.get(CHECK_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                }
            }
            expectSame(streamRows("SELECT CAST(`key` AS STRING), CAST(`value` AS STRING), CARDINALITY(headers),"
                    + " headers[1].`key`, CAST(headers[1].`value` AS STRING), headers[2].`key`, `timestamp`"
                    + " FROM `kafka`.`" + topic + "` /*+ OPTIONS('scan.startup.mode'='earliest') */", n),
                    want.toArray(new String[0]));
            expectSame(all(batch, "SELECT COUNT(*) FROM `kafka`.`" + topic + "`"), "+I[" + n + "]");
        });
        add("log_remote_earliest", "log table whose first segments are only in remote storage, earliest", () -> {
            java.io.File dataDir = new java.io.File(runOption("data-dir"));
            java.io.File remoteDir = new java.io.File(runOption("remote-dir"));
            // One bucket, so rows arrive in id order. The rows are appended with the Fluss Java
            // client in uncompressed batches of 40 rows, ~4.5 KB (an INSERT job per batch would
            // cost seconds each): every batch fills a 4 KB segment, so each closes one; one
            // local segment is kept.
            exec(stream, "CREATE TABLE remote_log_t (id INT, v STRING) WITH ('bucket.num'='1',"
                    + " 'table.log.tiered.local-segments'='1', 'table.log.arrow.compression.type'='NONE')");
            // 240 rows: six batches and segments, of which at least three must be tiered.
            int rows = 240;
            int minTiered = 3;
            appendPadded("remote_log_t", 1, rows, 40);
            long id = tableId(db, "remote_log_t");
            java.io.File bucketDir = new java.io.File(dataDir, "tablet/table-" + id + "/bucket-0");
            java.io.File tieredDir = new java.io.File(remoteDir, "log/" + db + "/remote_log_t-" + id);
            long deadline = System.nanoTime() + 45_000_000_000L;
            int local;
            int remote;
            while (true) {
                java.io.File[] logs = bucketDir.listFiles((d, name) -> name.endsWith(".log"));
                local = logs == null ? -1 : logs.length;
                remote = countFiles(tieredDir, ".log");
                if (local == 1 && remote >= minTiered) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    throw new TimeoutException("precondition: after 45 s " + bucketDir + " holds " + local
                            + " segments and remote storage " + remote + " (want 1 and at least " + minTiered + ")");
                }
                Thread.sleep(200);
            }
            // A row after the tiering: a row read twice (or skipped) anywhere before it shifts it.
            appendPadded("remote_log_t", rows + 1, rows + 1, 1);
            List<String> got = streamRows("SELECT id FROM remote_log_t /*+ OPTIONS('scan.startup.mode'='earliest') */",
                    rows + 1);
            for (int i = 0; i < got.size(); i++) {
                if (!got.get(i).equals("+I[" + (i + 1) + "]")) {
                    throw new AssertionError("row " + i + " is " + got.get(i) + ", want +I[" + (i + 1) + "]: " + got);
                }
            }
        });
    }

    // ------------------------------------------------------------------ running

    private static String describe(Throwable t) {
        // The root cause names the server's answer; the top names what Flink was doing.
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String top = t.getClass().getSimpleName() + ": " + t.getMessage();
        String bottom = root == t ? "" : " <- " + root.getClass().getName() + ": " + root.getMessage();
        return (top + bottom).replace('\n', ' ');
    }

    private static final ScheduledExecutorService WATCHDOG =
            Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "flinkcheck-watchdog");
                t.setDaemon(true);
                return t;
            });

    int runAll(List<String> only) {
        stream = newEnv(true);
        batch = newEnv(false);
        useCatalog(stream);
        useCatalog(batch);
        List<Check> selected = new ArrayList<>();
        for (Check c : checks) {
            boolean wanted = only.isEmpty() || only.contains(c.name())
                    || only.stream().anyMatch(o -> needs(o).contains(c.name()));
            if (wanted) {
                selected.add(c);
            }
        }
        int passed = 0;
        int failed = 0;
        for (Check c : selected) {
            long start = System.nanoTime();
            String result;
            try {
                c.body().run();
                result = "PASS " + c.name();
                passed++;
            } catch (Throwable t) {
                result = "FAIL " + c.name() + ": " + describe(t);
                failed++;
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            System.out.println(result + "  [" + c.item() + ", " + ms + " ms]");
            System.out.flush();
        }
        System.out.println("flink: " + passed + " passed, " + failed + " failed");
        return failed;
    }
}
