package org.rdmashuffle.benchmarks.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;

/**
 * The Java half of a post, without a device: filling a chain of RDMA_READs (bounds-checked SGEs
 * from a region) and terminating/relinking it as {@code postSend} does around the downcall. Runs
 * anywhere, so its {@code gc.alloc.rate.norm} (target 0 B/op) is measured over millions of
 * operations; {@link ReadChainPostBenchmark} adds the real downcall and completion on a device.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class ReadChainBuildBenchmark {
    @Param({"16"})
    int chainLength;

    private Arena arena;
    private MemoryRegion local;
    private SendWorkRequests chain;
    private long wrId;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofShared();
        local = new PlainRegion(arena.allocate(chainLength * 4096L, 4096));
        chain = SendWorkRequests.allocate(chainLength, 1);
    }

    @Benchmark
    public long buildAndLink() {
        int last = chainLength - 1;
        for (int i = 0; i < chainLength; i++) {
            long offset = i * 4096L;
            chain.get(i).rdmaRead(wrId++, i == last ? SendFlags.SIGNALED : 0, local, offset, 4096,
                    0x7f00_0000_0000L + offset, 0x1234);
        }
        long first = chain.beginPost(chainLength);
        chain.endPost(chainLength);
        return first;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        chain.close();
        arena.close();
    }

    /** Unregistered memory standing in for a region: only bounds and keys are read here. */
    private record PlainRegion(MemorySegment segment) implements MemoryRegion {
        public int lkey() {
            return 1;
        }

        public int rkey() {
            return 2;
        }

        public int access() {
            return Access.LOCAL_WRITE;
        }

        public void close() {
        }
    }
}
