package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.GidChoice;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.PortAttributes;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.VerbsProvider;
import org.rdmashuffle.verbs.WorkCompletionOpcode;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkCompletions;
import org.rdmashuffle.verbs.ibverbs.IbverbsProvider;
import org.rdmashuffle.verbs.testing.TestProviders;

/**
 * What every conformance test needs: the provider under test, a device with an active port, and
 * the GID to address it by. The provider is {@link TestProviders}' choice with {@code ibverbs} as
 * the default, so the same suite re-runs on every provider ({@code -Drdmashuffle.test.provider}),
 * and is skipped with the provider's reason (or, with {@code -Drdmashuffle.test.requireDevice=true},
 * failed) where it is not usable.
 */
public final class VerbsTestSupport {
    public static final String PROVIDER_PROPERTY = TestProviders.PROVIDER_PROPERTY;
    public static final String REQUIRE_DEVICE_PROPERTY = TestProviders.REQUIRE_DEVICE_PROPERTY;
    public static final Duration TIMEOUT = Duration.ofSeconds(Long.getLong("rdmashuffle.test.timeoutSeconds", 60));

    private VerbsTestSupport() {
    }

    public static VerbsProvider provider() {
        return TestProviders.shared(IbverbsProvider.NAME);
    }

    /** Skips (or, when a device is required, fails) unless the provider is usable here. */
    public static VerbsProvider requireAvailable() {
        return TestProviders.requireAvailable(provider());
    }

    /** The device to test: {@code SOFTROCE_DEVICE} / {@code -Drdmashuffle.test.device}, else the first with an active port. */
    public static Target target() {
        VerbsProvider provider = requireAvailable();
        String wanted = provider instanceof IbverbsProvider ? TestProviders.wantedDevice()
                : System.getProperty("rdmashuffle.test.device");
        for (VerbsDevice d : provider.devices()) {
            if (wanted != null && !wanted.equals(d.name())) {
                continue;
            }
            try (VerbsContext ctx = d.open()) {
                for (int p = 1; p <= ctx.queryDevice().physicalPortCount(); p++) {
                    PortAttributes port = ctx.queryPort(p);
                    if (port.isActive()) {
                        return new Target(d, p, gidIndex(ctx, port), port.activeMtu());
                    }
                }
            }
        }
        fail("no device" + (wanted == null ? "" : " named " + wanted) + " with an active port, though the provider is available");
        throw new AssertionError();
    }

    /** GID index: {@code SOFTROCE_GID_INDEX} if set, else {@link GidChoice}'s (a RoCE v2 IPv4 entry; -1 on InfiniBand). */
    private static int gidIndex(VerbsContext ctx, PortAttributes port) {
        String forced = TestProviders.forcedGidIndex(ctx.device());
        if (forced != null) {
            return Integer.parseInt(forced);
        }
        return GidChoice.choose(ctx, port, null).index();
    }

    /** A device, port and GID index to run on. */
    public record Target(VerbsDevice device, int port, int gidIndex, Mtu mtu) {
        public ConnectOptions connectOptions() {
            return ConnectOptions.defaults(port, gidIndex, mtu);
        }
    }

    /** A completion copied out of the native array, for assertions. */
    public record Completion(long wrId, WorkCompletionStatus status, WorkCompletionOpcode opcode, int opcodeCode,
                             int byteLength, int immediate, boolean hasImmediate, int qpNumber, int vendorError,
                             boolean hasInvalidated, int invalidatedRkey, int wcFlags) {
    }

    /** Polls until {@code count} completions arrived or the timeout passed; fails on timeout. */
    public static List<Completion> awaitCompletions(CompletionQueue cq, int count) {
        List<Completion> out = new ArrayList<>();
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        try (WorkCompletions wc = WorkCompletions.allocate(16)) {
            while (out.size() < count) {
                int n = cq.poll(wc);
                for (int i = 0; i < n; i++) {
                    out.add(new Completion(wc.wrId(i), wc.status(i), wc.isSuccess(i) ? wc.opcode(i) : WorkCompletionOpcode.UNKNOWN,
                            wc.opcodeCode(i), wc.byteLength(i), wc.immediate(i), wc.hasImmediate(i), wc.qpNumber(i), wc.vendorError(i),
                            wc.hasInvalidated(i), wc.invalidatedRkey(i), wc.flags(i)));
                }
                if (n == 0) {
                    if (System.nanoTime() > deadline) {
                        fail("waited " + TIMEOUT + " for " + count + " completions, got " + out.size() + ": " + out);
                    }
                    Thread.onSpinWait();
                }
            }
        }
        return out;
    }

    /** Polls for {@code quiet} and asserts that nothing more completes. */
    public static void assertNoMoreCompletions(CompletionQueue cq, Duration quiet) {
        long deadline = System.nanoTime() + quiet.toNanos();
        try (WorkCompletions wc = WorkCompletions.allocate(4)) {
            while (System.nanoTime() < deadline) {
                int n = cq.poll(wc);
                assertTrue(n == 0, () -> "unexpected completion wr_id " + wc.wrId(0) + " status " + wc.status(0));
                Thread.onSpinWait();
            }
        }
    }
}
