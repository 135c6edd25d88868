// Writes the fixtures of TestRbm64JavaFixtures (aggbitmap64_test.go) with the RoaringBitmap
// Java library that Fluss 0.9.1 uses (org.roaringbitmap:RoaringBitmap:1.3.0), serialized as
// Fluss's RoaringBitmapUtils does (runOptimize, then serialize(DataOutput)):
//
//	javac -cp RoaringBitmap-1.3.0.jar Fixtures.java
//	java -cp RoaringBitmap-1.3.0.jar:. Fixtures > fixtures.txt
//
// With an argument, it instead reads the hex bitmaps of a file (one per line, as the Go test
// writes them with STROM_RBM64_OUT) and prints the values Java reads from each, so that the
// Go writer's bytes can be checked against Java's reader:
//
//	java -cp RoaringBitmap-1.3.0.jar:. Fixtures go-output.txt
import java.io.*;
import java.nio.ByteBuffer;
import java.nio.file.*;
import java.util.*;
import org.roaringbitmap.longlong.Roaring64Bitmap;

public class Fixtures {
  static String hex(Roaring64Bitmap b) throws IOException {
    b.runOptimize();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    b.serialize(new DataOutputStream(out));
    StringBuilder sb = new StringBuilder();
    for (byte x : out.toByteArray()) sb.append(String.format("%02x", x));
    return sb.toString();
  }

  static String values(Roaring64Bitmap b) {
    StringBuilder sb = new StringBuilder();
    b.forEach(v -> sb.append(sb.length() == 0 ? "" : " ").append(Long.toUnsignedString(v)));
    return sb.toString();
  }

  // Each case: a name and the values of two bitmaps; the output line is
  // name | hex(a) | hex(b) | hex(a or b) | values(a or b).
  public static void main(String[] args) throws IOException {
    if (args.length == 1) {
      for (String line : Files.readAllLines(Paths.get(args[0]))) {
        byte[] b = new byte[line.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
        Roaring64Bitmap bm = new Roaring64Bitmap();
        bm.deserialize(ByteBuffer.wrap(b));
        System.out.println(values(bm));
      }
      return;
    }
    Map<String, long[][]> cases = new LinkedHashMap<>();
    cases.put("small", new long[][] {{1, 2, 3}, {3, 70000}});
    cases.put("empty-and-one", new long[][] {{}, {5}});
    long[] run = new long[300];
    for (int i = 0; i < run.length; i++) run[i] = (1L << 40) + i;
    cases.put("run", new long[][] {run, {(1L << 40) + 300, -1L}});
    long[] dense = new long[5000];
    for (int i = 0; i < dense.length; i++) dense[i] = 7L * i;
    cases.put("bitmap", new long[][] {dense, {1, 8}});
    long[] n16 = new long[10], n48 = new long[30], n256 = new long[100];
    for (int i = 0; i < n16.length; i++) n16[i] = ((long) i << 16) | i;
    for (int i = 0; i < n48.length; i++) n48[i] = ((long) (i * 3) << 24) | 9;
    for (int i = 0; i < n256.length; i++) n256[i] = ((long) (i * 2) << 56) | ((long) i << 20);
    cases.put("node16", new long[][] {n16, {Long.MAX_VALUE}});
    cases.put("node48", new long[][] {n48, {1L << 33}});
    cases.put("node256", new long[][] {n256, {3L << 56, Long.MIN_VALUE}});
    for (Map.Entry<String, long[][]> c : cases.entrySet()) {
      Roaring64Bitmap a = Roaring64Bitmap.bitmapOf(c.getValue()[0]);
      Roaring64Bitmap b = Roaring64Bitmap.bitmapOf(c.getValue()[1]);
      String ha = hex(a), hb = hex(b);
      a.or(b);
      System.out.println(c.getKey() + "|" + ha + "|" + hb + "|" + hex(a) + "|" + values(a));
    }
  }
}
