package org.rdmashuffle.benchmarks.verbs;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletions;
import org.rdmashuffle.verbs.WorkRequestBuilder;

/**
 * CPU cost per posted RDMA_READ work request, {@code ibv_post_send} (a linked chain) against the
 * extended builder ({@code ibv_wr_start} ... {@code ibv_wr_complete}), chains of 1, 16 and 64, on
 * the same QP. Every invocation also reaps the chain's one completion, so the queue never fills;
 * scores are per work request ({@code @OperationsPerInvocation}). Run with {@code -prof gc} for
 * heap bytes per posted WR (target 0). Needs a device: the Soft-RoCE guest runs it.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class PostPathBenchmark {
    private static final int BLOCK = 64;

    private VerbsBench bench;
    private SendWorkRequests chain;
    private WorkRequestBuilder builder;
    private WorkCompletions completions;
    private long wrId;

    @Setup(Level.Trial)
    public void setUp() {
        bench = new VerbsBench(64L * BLOCK, 130);
        chain = SendWorkRequests.allocate(64, 1);
        builder = bench.requester.workRequestBuilder();
        completions = WorkCompletions.allocate(4);
    }

    private int postSend(int n) {
        for (int i = 0; i < n; i++) {
            long off = (long) i * BLOCK;
            chain.get(i).rdmaRead(wrId++, i == n - 1 ? SendFlags.SIGNALED : 0, bench.destination, off, BLOCK,
                    bench.source.address() + off, bench.source.rkey());
        }
        bench.requester.postSend(chain, n);
        return reap();
    }

    private int build(int n) {
        WorkRequestBuilder b = builder;
        int rkey = bench.source.rkey();
        int lkey = bench.destination.lkey();
        long remote = bench.source.address();
        long local = bench.destination.address();
        b.start();
        for (int i = 0; i < n; i++) {
            long off = (long) i * BLOCK;
            b.wrId(wrId++).flags(i == n - 1 ? SendFlags.SIGNALED : 0).rdmaRead(rkey, remote + off).sge(lkey, local + off, BLOCK);
        }
        b.complete();
        return reap();
    }

    private int reap() {
        return bench.awaitCompletion(completions);
    }

    @Benchmark
    @OperationsPerInvocation(1)
    public int postSend1() {
        return postSend(1);
    }

    @Benchmark
    @OperationsPerInvocation(16)
    public int postSend16() {
        return postSend(16);
    }

    @Benchmark
    @OperationsPerInvocation(64)
    public int postSend64() {
        return postSend(64);
    }

    @Benchmark
    @OperationsPerInvocation(1)
    public int builder1() {
        return build(1);
    }

    @Benchmark
    @OperationsPerInvocation(16)
    public int builder16() {
        return build(16);
    }

    @Benchmark
    @OperationsPerInvocation(64)
    public int builder64() {
        return build(64);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        chain.close();
        completions.close();
        bench.close();
    }
}
