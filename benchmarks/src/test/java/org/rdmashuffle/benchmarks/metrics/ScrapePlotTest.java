package org.rdmashuffle.benchmarks.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

class ScrapePlotTest {
    @Test
    void eachRunsSeries_isACurveLabelledByItsRound() {
        List<ScrapePlot.Run> runs = ScrapePlot.parse(List.of(
                "round 1  builtin    900 ms  fetch wait 10 ms  12 remote blocks  result x",
                "    prometheus series (ms engine.bytes fallback.bytes): 500,0,0 1000,0,0",
                "round 1  rdma       800 ms  fetch wait 5 ms  12 remote blocks  result x",
                "    prometheus series (ms engine.bytes fallback.bytes): 500,0,0 1000,2000000,0 1500,4000000,0"));
        assertEquals(2, runs.size());
        assertEquals("round 1, rdma", runs.get(1).label());
        assertEquals(4_000_000, runs.get(1).points().getLast()[1]);
        String svg = ScrapePlot.svg(runs);
        assertTrue(svg.startsWith("<svg") && svg.contains("<polyline"), svg);
        assertTrue(svg.contains("round 1, rdma: over the engine (solid) 4.0 MB"), svg);
    }
}
