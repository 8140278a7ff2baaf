package org.rdmashuffle.benchmarks.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletions;

/**
 * What on-demand paging costs against pinned registration, as the engine's serving side meets it: a
 * map output already in memory (written, so its pages are resident) registered for remote reads, then
 * read by a peer. Per round, alternating the order, each of three ways with a fresh region: pinned,
 * on demand, on demand with every page prefetched ({@code ibv_advise_mr}) right after registering.
 * Measured: the registration's time, the latency of the first 4 KiB read of each of 64 pages spread
 * over the region (each page's first touch by the device), and the bandwidth of reading the whole
 * region in 1 MiB reads, first pass (cold for on demand) and second (warm). Every round printed.
 *
 * <p>Needs a device with on-demand paging (rxe from Linux 7.2): {@code softroce/softroce.sh} with
 * {@code SOFTROCE_KERNEL=forky}; see docs/native-verbs.md. Usage: {@code OnDemandPagingCost [MiB] [rounds]}
 */
public final class OnDemandPagingCost {
    private static final int PAGE = 4096;
    private static final int READ = 1 << 20;
    private static final int WINDOW = 16;
    private static final int PROBES = 64;

    private OnDemandPagingCost() {
    }

    private record Sample(String way, int round, double registerMs, double firstReadMicros, double coldMBps, double warmMBps) {
    }

    public static void main(String[] args) {
        long bytes = (args.length > 0 ? Long.parseLong(args[0]) : 32) << 20;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        List<Sample> samples = new ArrayList<>();
        try (VerbsBench bench = new VerbsBench(PAGE, WINDOW + 1);
             MemoryRegion destination = bench.pd.allocateAndRegister((long) READ * WINDOW, Access.LOCAL_WRITE);
             SendWorkRequests one = SendWorkRequests.allocate(1, 1);
             WorkCompletions wc = WorkCompletions.allocate(WINDOW)) {
            if (!bench.context.queryDevice().supportsOnDemandPaging()) {
                System.out.println(bench.context.device().name() + " has no on-demand paging for RC reads: nothing to compare");
                return;
            }
            String[] ways = {"pinned", "on demand", "on demand + prefetch"};
            for (int r = 1; r <= rounds; r++) {
                for (int k = 0; k < ways.length; k++) {
                    String way = ways[(k + r) % ways.length]; // each way first, second and last in turn
                    samples.add(measure(bench, destination, one, wc, way, r, bytes));
                    Sample s = samples.getLast();
                    System.out.printf(Locale.ROOT, "round %d %-22s register %8.2f ms, first read of a page %8.1f us (median of %d), "
                            + "cold pass %7.1f MB/s, warm pass %7.1f MB/s%n", r, way, s.registerMs(), s.firstReadMicros(), PROBES,
                            s.coldMBps(), s.warmMBps());
                }
            }
            System.out.println();
            System.out.println("| way | register ms | first read of a page us | cold MB/s | warm MB/s | (medians of " + rounds + " rounds, "
                    + (bytes >> 20) + " MiB regions) |");
            System.out.println("|---|---|---|---|---|---|");
            for (String way : ways) {
                List<Sample> of = samples.stream().filter(s -> s.way().equals(way)).toList();
                System.out.printf(Locale.ROOT, "| %s | %.2f | %.1f | %.1f | %.1f | |%n", way,
                        median(of.stream().mapToDouble(Sample::registerMs).toArray()),
                        median(of.stream().mapToDouble(Sample::firstReadMicros).toArray()),
                        median(of.stream().mapToDouble(Sample::coldMBps).toArray()),
                        median(of.stream().mapToDouble(Sample::warmMBps).toArray()));
            }
        }
    }

    private static Sample measure(VerbsBench bench, MemoryRegion destination, SendWorkRequests one, WorkCompletions wc,
                                  String way, int round, long bytes) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment memory = arena.allocate(bytes, PAGE);
            memory.fill((byte) (0x40 + round)); // resident, as a map output just written is
            boolean onDemand = !way.equals("pinned");
            long t0 = System.nanoTime();
            // LOCAL_WRITE on all three: rxe takes prefetch advice only for a region it may write locally.
            try (MemoryRegion source = bench.pd.register(memory, Access.LOCAL_WRITE | Access.REMOTE_READ | (onDemand ? Access.ON_DEMAND : 0))) {
                if (way.endsWith("prefetch")) {
                    bench.pd.prefetch(source, 0, bytes);
                }
                double registerMs = (System.nanoTime() - t0) / 1e6;
                double[] first = new double[PROBES];
                long stride = bytes / PROBES / PAGE * PAGE;
                for (int i = 0; i < PROBES; i++) {
                    one.get(0).rdmaRead(i, SendFlags.SIGNALED, destination, 0, PAGE, source.address() + i * stride, source.rkey());
                    long s = System.nanoTime();
                    bench.requester.postSend(one, 1);
                    bench.awaitCompletion(wc);
                    first[i] = (System.nanoTime() - s) / 1e3;
                }
                double cold = pass(bench, destination, source, wc, bytes);
                double warm = pass(bench, destination, source, wc, bytes);
                return new Sample(way, round, registerMs, median(first), cold, warm);
            }
        }
    }

    /** Reads the whole region once in 1 MiB reads, {@value #WINDOW} outstanding; MB/s. */
    private static double pass(VerbsBench bench, MemoryRegion destination, MemoryRegion source, WorkCompletions wc, long bytes) {
        int reads = (int) (bytes / READ);
        SendWorkRequests[] slots = new SendWorkRequests[WINDOW];
        try {
            for (int s = 0; s < WINDOW; s++) {
                slots[s] = SendWorkRequests.allocate(1, 1);
            }
            int posted = 0;
            int done = 0;
            long start = System.nanoTime();
            for (int s = 0; s < WINDOW && posted < reads; s++, posted++) {
                slots[s].get(0).rdmaRead(s, SendFlags.SIGNALED, destination, (long) s * READ, READ,
                        source.address() + (long) posted * READ, source.rkey());
                bench.requester.postSend(slots[s], 1);
            }
            while (done < reads) {
                int n = bench.cq.poll(wc);
                for (int i = 0; i < n; i++) {
                    if (!wc.isSuccess(i)) {
                        throw wc.failure(i);
                    }
                    done++;
                    if (posted < reads) {
                        int s = (int) wc.wrId(i);
                        slots[s].get(0).rdmaRead(s, SendFlags.SIGNALED, destination, (long) s * READ, READ,
                                source.address() + (long) posted * READ, source.rkey());
                        bench.requester.postSend(slots[s], 1);
                        posted++;
                    }
                }
            }
            return bytes / ((System.nanoTime() - start) / 1e3);
        } finally {
            for (SendWorkRequests s : slots) {
                if (s != null) {
                    s.close();
                }
            }
        }
    }

    private static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }
}
