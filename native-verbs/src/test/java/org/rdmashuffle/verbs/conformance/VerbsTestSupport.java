package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Assumptions;
import org.rdmashuffle.verbs.Availability;
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
import org.rdmashuffle.verbs.software.SoftwareProvider;

/**
 * What every conformance test needs: the provider under test, a device with an active port, and
 * the GID to address it by. Which provider runs is chosen by {@code -Drdmashuffle.test.provider}
 * (default {@code ibverbs}), so the same suite re-runs on every provider.
 *
 * <p>Without a usable device the tests are skipped with the provider's reason; with
 * {@code -Drdmashuffle.test.requireDevice=true} (the Soft-RoCE guest sets it) they fail instead,
 * so a run that was meant to prove the real device path cannot pass by skipping.
 */
public final class VerbsTestSupport {
    public static final String PROVIDER_PROPERTY = "rdmashuffle.test.provider";
    public static final String REQUIRE_DEVICE_PROPERTY = "rdmashuffle.test.requireDevice";
    public static final Duration TIMEOUT = Duration.ofSeconds(Long.getLong("rdmashuffle.test.timeoutSeconds", 60));

    private VerbsTestSupport() {
    }

    public static VerbsProvider provider() {
        String name = System.getProperty(PROVIDER_PROPERTY, IbverbsProvider.NAME);
        return switch (name) {
            case IbverbsProvider.NAME -> IbverbsProvider.instance();
            case SoftwareProvider.NAME -> SoftwareProvider.instance();
            default -> throw new IllegalArgumentException("unknown provider in -D" + PROVIDER_PROPERTY + ": " + name);
        };
    }

    /** Skips (or, when a device is required, fails) unless the provider is usable here. */
    public static VerbsProvider requireAvailable() {
        VerbsProvider provider = provider();
        Availability a = provider.availability();
        if (!a.available()) {
            String why = provider.name() + " provider unavailable: " + a.cause();
            if (Boolean.getBoolean(REQUIRE_DEVICE_PROPERTY)) {
                fail(why + " (and -D" + REQUIRE_DEVICE_PROPERTY + "=true)");
            }
            Assumptions.abort(why);
        }
        return provider;
    }

    /** The device to test: {@code SOFTROCE_DEVICE} / {@code -Drdmashuffle.test.device}, else the first with an active port. */
    public static Target target() {
        VerbsProvider provider = requireAvailable();
        String wanted = System.getProperty("rdmashuffle.test.device",
                provider instanceof IbverbsProvider ? System.getenv("SOFTROCE_DEVICE") : null);
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
        String forced = System.getProperty("rdmashuffle.test.gidIndex",
                ctx.device().name().startsWith("rxe") ? System.getenv("SOFTROCE_GID_INDEX") : null);
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
                             int byteLength, int immediate, boolean hasImmediate, int qpNumber, int vendorError) {
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
                            wc.opcodeCode(i), wc.byteLength(i), wc.immediate(i), wc.hasImmediate(i), wc.qpNumber(i), wc.vendorError(i)));
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
