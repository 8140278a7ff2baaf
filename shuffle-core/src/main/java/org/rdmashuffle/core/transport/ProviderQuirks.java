package org.rdmashuffle.core.transport;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.rdmashuffle.verbs.VerbsContext;

/** Known provider bugs the engine steps around, each with the upstream fix that ends it. */
public final class ProviderQuirks {
    /** libibverbs.so.1.ABI.RELEASE[.PATCH], e.g. libibverbs.so.1.18.65.0: the rdma-core release is the third number. */
    private static final Pattern LIBIBVERBS = Pattern.compile("libibverbs\\.so\\.1\\.\\d+\\.(\\d+)(?:\\.\\d+)*");

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

    /**
     * The rdma-core release in a libibverbs file name ({@code libibverbs.so.1.18.65.0}: 65), or -1. Until
     * 2026-11-27 the pattern wanted the name to end after the release, which no installed name does: every
     * rdma-core was taken for one before 64, and multi-SGE reads on rxe went through ibv_post_send on 65 too.
     */
    static int releaseOf(String fileName) {
        Matcher m = LIBIBVERBS.matcher(fileName);
        return m.matches() ? Integer.parseInt(m.group(1)) : -1;
    }

    /** The rdma-core release of the libibverbs this process loaded, or -1 if it cannot tell. */
    static int rdmaCoreVersion() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                int at = line.indexOf('/');
                if (at < 0 || !line.contains("libibverbs.so")) {
                    continue;
                }
                int release = releaseOf(Path.of(line.substring(at)).toRealPath().getFileName().toString());
                if (release >= 0) {
                    return release;
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }
}
