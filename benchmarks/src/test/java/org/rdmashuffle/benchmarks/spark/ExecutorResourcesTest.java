package org.rdmashuffle.benchmarks.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a run's executors hold: /proc's texts read into figures, and the arithmetic of storage reads and the page cache. */
class ExecutorResourcesTest {
    /** /proc/<pid>/status as Linux writes it (the lines read, among others). */
    private static final String STATUS = """
            Name:\tjava
            Umask:\t0022
            State:\tS (sleeping)
            Tgid:\t4242
            VmPeak:\t 5834212 kB
            VmSize:\t 5801000 kB
            VmLck:\t       0 kB
            VmPin:\t    2048 kB
            VmHWM:\t 1268836 kB
            VmRSS:\t 1103012 kB
            RssAnon:\t  900000 kB
            RssFile:\t  203012 kB
            RssShmem:\t       0 kB
            Threads:\t77
            """;
    private static final String IO = """
            rchar: 123456789
            wchar: 98765
            syscr: 1000
            syscw: 20
            read_bytes: 409600
            write_bytes: 8192
            cancelled_write_bytes: 0
            """;

    @Test
    void aReading_takesStatusInKib_andIoInBytes() {
        ExecutorResources.Reading r = ExecutorResources.reading(1_000, STATUS, IO, 412, 1033);
        assertEquals(1_103_012L * 1024, r.rss());
        assertEquals(1_268_836L * 1024, r.peakRss());
        assertEquals(203_012L * 1024, r.fileRss());
        assertEquals(2048L * 1024, r.pinned());
        assertEquals(409_600, r.storageReads()); // read_bytes, not rchar: what the storage read, not what read() returned
        assertEquals(412, r.descriptors());
        assertEquals(1033, r.mappings());
    }

    @Test
    void aMissingField_isZero_andAFieldWithoutANumber_isRefusedByName() {
        assertEquals(0, ExecutorResources.kib("Name:\tjava\nVmRSS:\t 10 kB\n", "VmPin"));
        assertEquals(10 * 1024, ExecutorResources.kib("Name:\tjava\nVmRSS:\t 10 kB\n", "VmRSS"));
        assertEquals(5, ExecutorResources.field("read_bytes: 5\n", "read_bytes")); // the first line
        assertEquals(0, ExecutorResources.field("xread_bytes: 5\n", "read_bytes")); // a line of another name
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ExecutorResources.field("VmRSS:\tlots\n", "VmRSS"));
        assertTrue(e.getMessage().contains("VmRSS"), e.getMessage());
    }

    @Test
    void mappingsAreCountedByLine_acrossReadsOfAnyLength() throws Exception {
        StringBuilder maps = new StringBuilder();
        for (int i = 0; i < 5000; i++) { // more than one 64 KiB read
            maps.append("7f0000000000-7f0000001000 r--p 00000000 fd:00 123 /usr/lib/jvm/lib/libjvm.so\n");
        }
        assertEquals(5000, ExecutorResources.lines(new ByteArrayInputStream(maps.toString().getBytes())));
        assertEquals(0, ExecutorResources.lines(new ByteArrayInputStream(new byte[0])));
    }

    /** This JVM read from its own /proc: what it holds is there, and a file it opens and maps shows as one more of each. */
    @Test
    void aLiveProcess_isReadFromProc_andItsDescriptorsAndMappingsFollowWhatItOpens(@TempDir Path dir) throws Exception {
        long pid = ProcessHandle.current().pid();
        ExecutorResources.Reading before = ExecutorResources.read(pid, 0);
        assertNotNull(before);
        assertTrue(before.rss() > 0 && before.peakRss() >= before.rss(), before.toString());
        Path file = Files.write(dir.resolve("mapped"), new byte[1 << 20]);
        List<FileChannel> open = new ArrayList<>();
        List<java.nio.MappedByteBuffer> mapped = new ArrayList<>();
        try {
            for (int i = 0; i < 20; i++) {
                FileChannel c = FileChannel.open(file, StandardOpenOption.READ);
                open.add(c);
                mapped.add(c.map(FileChannel.MapMode.READ_ONLY, 0, 1 << 20));
            }
            ExecutorResources.Reading after = ExecutorResources.read(pid, 0);
            assertNotNull(after);
            assertTrue(after.descriptors() >= before.descriptors() + 20, before + " then " + after);
            assertTrue(after.mappings() >= before.mappings() + 20, before + " then " + after);
        } finally {
            for (FileChannel c : open) {
                c.close();
            }
        }
        assertNull(ExecutorResources.read(Long.MAX_VALUE / 2, 0)); // no such process: no reading
    }

    @Test
    void storageReadsInAWindow_runFromTheLastReadingBeforeItToTheFirstAfterIt() {
        long[] at = {1_000, 2_000, 3_000, 4_000, 5_000};
        long[] reads = {100, 150, 400, 900, 1_000};
        ExecutorResources.Executor e = new ExecutorResources.Executor(1, 0, 0, 0, 0, 0, at, reads);
        assertEquals(900 - 150, e.storageReadsDuring(2_500, 3_500)); // readings at 2,000 and 4,000
        assertEquals(400 - 150, e.storageReadsDuring(2_000, 3_000)); // readings at its edges count as inside
        assertEquals(1_000 - 100, e.storageReadsDuring(0, 9_000)); // wider than the readings: all of them
        assertEquals(0, e.storageReadsDuring(6_000, 7_000)); // after the last reading
        assertEquals(0, new ExecutorResources.Executor(1, 0, 0, 0, 0, 0, new long[0], new long[0]).storageReadsDuring(0, 1));
    }

    @Test
    void thePageCachesShare_isWhatTheStorageDidNotRead_withinZeroAndOne() {
        assertEquals(0.89, ExecutorResources.pageCacheShare(385_000_000L, 3_500_000_000L), 1e-9);
        assertEquals(1.0, ExecutorResources.pageCacheShare(0, 3_500_000_000L), 1e-9);
        assertEquals(0.0, ExecutorResources.pageCacheShare(5_000, 3_000), 1e-9); // spills read back: more than the shuffle
        assertTrue(Double.isNaN(ExecutorResources.pageCacheShare(10, 0)));
        assertEquals("n/a", ResourceReport.percent(Double.NaN));
        assertEquals("89%", ResourceReport.percent(0.89));
    }

    /**
     * A run's report: the reduce side is the stages that read the shuffle, its window theirs; the storage reads
     * are summed over executors in that window; the run's line and the medians say the figures.
     */
    @Test
    void aRunsReport_takesTheReduceStagesWindow_sumsItsExecutors_andPrintsEveryFigure() {
        StageAccounting.Stage map = new StageAccounting.Stage(0, "repartitionAndSortWithinPartitions at X", 16, 9_000, 0, 0, 0, 0, 0,
                0, 0, 0, 1_000, 0, 357_000_000);
        StageAccounting.Stage reduce = new StageAccounting.Stage(1, "collect at X", 16, 5_000, 0, 0, 0, 0, 0, 0, 0, 1_000, 0,
                350_000_000, 0);
        List<StageAccounting.Window> windows = List.of(new StageAccounting.Window(0, "repartitionAndSortWithinPartitions", 0, 9_000),
                new StageAccounting.Window(1, "collect", 9_100, 14_000));
        long[] at = {0, 5_000, 9_000, 10_000, 14_000, 15_000};
        ExecutorResources.Executor a = new ExecutorResources.Executor(11, 3L << 30, 1L << 29, 0, 412, 1_033, at,
                new long[] {0, 10, 20_000_000, 30_000_000, 40_000_000, 90_000_000});
        ExecutorResources.Executor b = new ExecutorResources.Executor(12, 2L << 30, 1L << 28, 0, 300, 900, at,
                new long[] {0, 0, 0, 5_000_000, 15_000_000, 15_000_000});
        Map<String, PluginGauges.Executor> registered = Map.of("0", new PluginGauges.Executor("0", 120L << 20, 64L << 20, 30));
        ResourceReport r = ResourceReport.of(List.of(a, b), List.of(map, reduce), windows, 0, 7_000, registered);
        assertEquals(350_000_000, r.shuffleRead());
        assertEquals((40_000_000 - 20_000_000) + 15_000_000, r.storageReads()); // 9,000 to 14,000 on each
        assertEquals(0.9, r.pageCacheShare(), 1e-9);
        List<String> lines = r.lines();
        assertEquals(2, lines.size(), lines.toString());
        assertTrue(lines.get(0).contains("peak RSS 3.00/2.00 GiB (file-backed at most 0.50/0.25)"), lines.get(0));
        assertTrue(lines.get(0).contains("fds max 412, maps max 1,033"), lines.get(0));
        assertTrue(lines.get(0).contains("storage reads 35.0 MB of 350.0 MB shuffle read (page cache served 90%)"), lines.get(0));
        assertTrue(lines.get(0).contains("spilled 0 B memory / 7.0 kB disk"), lines.get(0));
        assertTrue(lines.get(1).contains("map outputs at most 120.00 MiB") && lines.get(1).contains("fetch buffers 64.00 MiB"),
                lines.get(1));
        ResourceReport other = ResourceReport.of(List.of(b), List.of(map, reduce), windows, 0, 0, null);
        assertEquals(1, other.lines().size()); // nothing registered to say
        String table = ResourceReport.medians(new java.util.LinkedHashMap<>(Map.of("rdma-shuffle", List.of(r, r, other))));
        String row = table.lines().filter(l -> l.startsWith("| rdma-shuffle |")).findFirst().orElseThrow();
        assertTrue(row.startsWith("| rdma-shuffle | 3.00 | 0.50 | 0 B | 412 | 1,033 | 35.0 MB | 350.0 MB | 90% | 0 B | 7.0 kB | 120.0 | 64.0 |"),
                row);
    }
}
