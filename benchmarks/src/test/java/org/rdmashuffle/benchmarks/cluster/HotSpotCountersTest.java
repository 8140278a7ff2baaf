package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;

/** The heap of a JVM read from its HotSpot counters file, checked against what this JVM says of itself. */
class HotSpotCountersTest {
    @Test
    void thisJvmsCounters_sayWhatItsOwnBeansSay() throws Exception {
        long pid = ProcessHandle.current().pid();
        Path file = HotSpotCounters.file(pid);
        assertNotNull(file, "this JVM keeps a counters file (-XX:+UsePerfData, the default)");
        Map<String, Long> counters = HotSpotCounters.counters(ByteBuffer.wrap(Files.readAllBytes(file)));
        // A counter that does not move: when the JVM finished starting, which its runtime bean reports from the same counter.
        assertEquals(ManagementFactory.getRuntimeMXBean().getStartTime(), counters.get("sun.rt.vmInitDoneTime"),
                "the runtime's start, of " + counters.size() + " counters");
        long committed = Runtime.getRuntime().totalMemory();
        HotSpotCounters.Heap heap = HotSpotCounters.heap(pid);
        assertNotNull(heap);
        assertTrue(heap.used() > 0 && heap.used() <= heap.committed(), heap.toString());
        // Runtime.totalMemory is the committed heap less a survivor space the collector keeps empty; both move with GCs.
        long max = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getMax();
        assertTrue(heap.committed() >= committed / 2 && heap.committed() <= max + (64L << 20),
                heap + " against committed " + committed + ", max " + max);
    }

    @Test
    void aProcessWithoutCounters_givesNoHeap_andAFileOfAnotherKindIsRefused() {
        assertNull(HotSpotCounters.heap(Long.MAX_VALUE / 2));
        assertThrows(IllegalArgumentException.class, () -> HotSpotCounters.counters(ByteBuffer.wrap(new byte[64])));
    }
}
