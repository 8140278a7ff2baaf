package org.rdmashuffle.core.transport;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.rdmashuffle.verbs.VerbsContext;

/** Known provider bugs the engine steps around, each with the upstream fix that ends it. */
public final class ProviderQuirks {
    private static final Pattern LIBIBVERBS = Pattern.compile("libibverbs\\.so\\.1\\.\\d+\\.(\\d+)");

    private ProviderQuirks() {
    }

    /**
     * rxe's {@code ibv_wr_set_sge_list} before rdma-core 64 (fix 406cd2ad0) sums the first SGE's length
     * {@code num_sge} times, so a multi-SGE read through the builder fails with LOC_PROT_ERR.
     * Multi-SGE chains then go through {@code ibv_post_send}, which is unaffected.
     */
    public static boolean builderSgeListBroken(VerbsContext context) {
        if (!context.device().name().startsWith("rxe")) {
            return false;
        }
        int v = rdmaCoreVersion();
        return v < 0 || v < 64;
    }

    /** The rdma-core release of the libibverbs this process loaded, or -1 if it cannot tell. */
    static int rdmaCoreVersion() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                int at = line.indexOf('/');
                if (at < 0 || !line.contains("libibverbs.so")) {
                    continue;
                }
                Path lib = Path.of(line.substring(at)).toRealPath();
                Matcher m = LIBIBVERBS.matcher(lib.getFileName().toString());
                if (m.matches()) {
                    return Integer.parseInt(m.group(1));
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }
}
