package dev.strom.rocksdbcheck;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;
import org.rocksdb.Snapshot;

/**
 * Opens each directory given as an argument as Fluss's snapshot reader does (read-only, default
 * options, the default column family, a RocksDB snapshot, iteration from the first key) and prints
 * "dir", then one "key-hex value-hex" line per entry, then "end N". Exits non-zero when a directory
 * does not open.
 */
public final class RocksDBCheck {
    public static void main(String[] args) throws Exception {
        RocksDB.loadLibrary();
        HexFormat hex = HexFormat.of();
        for (String dir : args) {
            System.out.println("db " + dir);
            try (DBOptions dbOptions = new DBOptions();
                    ColumnFamilyOptions cfOptions = new ColumnFamilyOptions()) {
                List<ColumnFamilyDescriptor> cfs = new ArrayList<>();
                cfs.add(new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, cfOptions));
                List<ColumnFamilyHandle> handles = new ArrayList<>();
                try (RocksDB db = RocksDB.openReadOnly(dbOptions, dir, cfs, handles)) {
                    Snapshot snap = db.getSnapshot();
                    long n = 0;
                    try (ReadOptions ro = new ReadOptions().setSnapshot(snap);
                            RocksIterator it = db.newIterator(handles.get(0), ro)) {
                        for (it.seekToFirst(); it.isValid(); it.next()) {
                            System.out.println(hex.formatHex(it.key()) + " " + hex.formatHex(it.value()));
                            n++;
                        }
                        it.status();
                    } finally {
                        db.releaseSnapshot(snap);
                        for (ColumnFamilyHandle h : handles) {
                            h.close();
                        }
                    }
                    System.out.println("end " + n);
                }
            }
        }
    }
}
