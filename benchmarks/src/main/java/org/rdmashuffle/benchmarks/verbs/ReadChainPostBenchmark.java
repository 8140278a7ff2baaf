package org.rdmashuffle.benchmarks.verbs;

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
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletions;

/**
 * Building and posting a chain of RDMA_READs (only the last signaled) and reaping its completion:
 * the engine's per-fetch cost on the verbs layer. Run with {@code -prof gc}: the target is
 * 0 B/op (gc.alloc.rate.norm), i.e. nothing allocated on the heap per post. Needs a device (the
 * Soft-RoCE guest runs it: softroce/guest-tests.sh --bench).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class ReadChainPostBenchmark {
    @Param({"16"})
    int chainLength;

    @Param({"4096"})
    int blockBytes;

    private VerbsBench bench;
    private SendWorkRequests chain;
    private WorkCompletions completions;
    private long wrId;

    @Setup(Level.Trial)
    public void setUp() {
        bench = new VerbsBench((long) chainLength * blockBytes, chainLength * 2);
        chain = SendWorkRequests.allocate(chainLength, 1);
        completions = WorkCompletions.allocate(4);
    }

    @Benchmark
    public int buildPostAndReap() {
        int last = chainLength - 1;
        for (int i = 0; i < chainLength; i++) {
            long offset = (long) i * blockBytes;
            chain.get(i).rdmaRead(wrId++, i == last ? SendFlags.SIGNALED : 0, bench.destination, offset, blockBytes,
                    bench.source.address() + offset, bench.source.rkey());
        }
        bench.requester.postSend(chain, chainLength);
        return bench.awaitCompletion(completions);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        chain.close();
        completions.close();
        bench.close();
    }
}
