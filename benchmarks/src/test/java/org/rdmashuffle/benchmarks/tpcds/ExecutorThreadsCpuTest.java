package org.rdmashuffle.benchmarks.tpcds;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.junit.jupiter.api.Test;

/** benchmarks/tpcds.sh --cpu-by-thread's table: each application's shares, the plugin's with its carriers. */
class ExecutorThreadsCpuTest {
    @Test
    void eachApplicationsSharesAreOfItsOwnExecutorsCpu_andThePluginsIsTheOneWithItsThreads() {
        List<String> t = ExecutorThreadsCpu.table(new TreeMap<>(Map.of(
                "app-b", Map.of(ExecutorThreadsCpu.TASKS, 60.0, ExecutorThreadsCpu.NETTY, 1.5, "JIT", 38.5),
                "app-r", Map.of(ExecutorThreadsCpu.TASKS, 50.0, ExecutorThreadsCpu.PLUGIN, 1.5, ExecutorThreadsCpu.CARRIERS, 0.5,
                        ExecutorThreadsCpu.NETTY, 1.0, "JIT", 47.0))));
        assertEquals(4, t.size(), String.join("\n", t));
        assertEquals("| app-b | built-in | 100.0 | 60.00% | 0.00% (0.0 s) | 1.50% (1.5 s) |", t.get(2));
        assertEquals("| app-r | rdma-shuffle | 100.0 | 50.00% | 2.00% (2.0 s) | 1.00% (1.0 s) |", t.get(3));
    }
}
