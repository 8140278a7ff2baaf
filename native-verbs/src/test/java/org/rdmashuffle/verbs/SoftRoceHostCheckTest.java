package org.rdmashuffle.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Soft-RoCE guest stages boot Debian's kernel package (linux-image-amd64, resolved with the host's
 * apt). On a host without it (Ubuntu, another architecture, no apt) a stage says so in one line and is
 * skipped (exit 77) before it builds anything; under CI=true it fails instead (125); a Debian x86-64 host
 * whose apt cannot name it is told to run apt-get update. Here the host is made up: apt-cache and dpkg
 * are stubs on PATH and the distribution is read from a file of the test's ({@code SOFTROCE_OS_RELEASE}).
 * Host-only ({@code structure}): it reads the checkout's scripts.
 */
@Tag("structure")
class SoftRoceHostCheckTest {
    private static final String UBUNTU = "PRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nNAME=\"Ubuntu\"\nID=ubuntu\nID_LIKE=debian\n";
    private static final String DEBIAN = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nID=debian\n";
    /** What apt-cache depends prints where linux-image-amd64 names a kernel (Debian) and where it is unknown. */
    private static final String DEPENDS = "linux-image-amd64\n  Depends: linux-image-6.1.0-99-amd64\n";
    private static final String NEED = "softroce: skipped: the Soft-RoCE guest stages need Debian's kernel package "
            + "(linux-image-amd64, with the host's apt) on an x86-64 Debian host, and ";

    @TempDir
    Path dir;

    private record Run(int exit, String out, String err) {
        List<String> errLines() {
            return err.lines().toList();
        }
    }

    @Test
    void onUbuntu_theStageSaysInOneLineThatItNeedsDebiansKernelPackage_andSkips() throws Exception {
        Run r = hostCheck(UBUNTU, "", "amd64", false);
        assertEquals(77, r.exit(), r.toString());
        assertEquals(List.of(NEED + "this host's apt has no linux-image-amd64 (Ubuntu 24.04.1 LTS)"), r.errLines());
        assertEquals("", r.out());
        assertFalse(r.err().contains("apt-get update"), r.err());
    }

    @Test
    void underCi_aStageThatCannotRunFails() throws Exception {
        Run r = hostCheck(UBUNTU, "", "amd64", true);
        assertEquals(125, r.exit(), r.toString());
        assertEquals(1, r.errLines().size(), r.toString());
        assertTrue(r.err().startsWith("softroce: error: the Soft-RoCE guest stages need Debian's kernel package")
                && r.err().contains("(Ubuntu 24.04.1 LTS); under CI=true a stage that cannot run fails"), r.err());
    }

    @Test
    void onAnotherArchitecture_orWithoutApt_theStageSkipsNamingWhy() throws Exception {
        Run arm = hostCheck(DEBIAN, "", "arm64", false);
        assertEquals(77, arm.exit(), arm.toString());
        assertEquals(List.of(NEED + "this host is arm64 (Debian GNU/Linux 12 (bookworm)), not x86-64"), arm.errLines());

        Run noApt = run(List.of("host-check"), UBUNTU, null, "amd64", false);
        assertEquals(77, noApt.exit(), noApt.toString());
        assertEquals(List.of(NEED + "this host has no apt (Ubuntu 24.04.1 LTS)"), noApt.errLines());
    }

    @Test
    void onDebianWithoutPackageLists_itIsToldToRunAptGetUpdate_andFails() throws Exception {
        Run r = hostCheck(DEBIAN, "", "amd64", false);
        assertEquals(125, r.exit(), r.toString());
        assertEquals(List.of("softroce: error: cannot resolve linux-image-amd64's kernel package (run: apt-get update)"), r.errLines());
    }

    @Test
    void onDebianWhoseAptNamesTheKernel_orWithTheKernelCached_theStageRuns() throws Exception {
        Run debian = hostCheck(DEBIAN, DEPENDS, "amd64", false);
        assertEquals(0, debian.exit(), debian.toString());
        assertEquals("", debian.err());
        // Once unpacked, the kernel is the cache's: no apt is asked, whatever the host.
        Path cached = dir.resolve("cache/softroce");
        Files.createDirectories(cached);
        Files.writeString(cached.resolve("kernel.ready"), "6.1.0-99-amd64\n");
        Run ubuntu = hostCheck(UBUNTU, "", "amd64", true);
        assertEquals(0, ubuntu.exit(), ubuntu.toString());
    }

    /** A guest stage skips before it builds: Maven is never started. */
    @Test
    void guestTests_skipsWithTheSameLine_beforeBuildingAnything() throws Exception {
        Path root = root();
        Run r = start(List.of("bash", root.resolve("softroce/guest-tests.sh").toString()), UBUNTU, "", "amd64", false);
        assertEquals(77, r.exit(), r.toString());
        assertEquals(List.of(NEED + "this host's apt has no linux-image-amd64 (Ubuntu 24.04.1 LTS)"), r.errLines());
        assertFalse(Files.exists(dir.resolve("called")), "something was built: " + (Files.exists(dir.resolve("called"))
                ? Files.readString(dir.resolve("called")) : ""));
    }

    private Run hostCheck(String osRelease, String aptCacheDepends, String dpkgArch, boolean ci) throws Exception {
        return run(List.of("host-check"), osRelease, aptCacheDepends, dpkgArch, ci);
    }

    private Run run(List<String> args, String osRelease, String aptCacheDepends, String dpkgArch, boolean ci) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("bash", root().resolve("softroce/softroce.sh").toString()));
        cmd.addAll(args);
        return start(cmd, osRelease, aptCacheDepends, dpkgArch, ci);
    }

    /**
     * Runs {@code cmd} on a made-up host: PATH is a directory of the tools the scripts use, passed on to
     * this machine's, plus stubs: apt-cache printing {@code aptCacheDepends} (null: no apt at all), dpkg
     * printing {@code dpkgArch}, and mvn and java recording that they were called.
     */
    private Run start(List<String> cmd, String osRelease, String aptCacheDepends, String dpkgArch, boolean ci)
            throws IOException, InterruptedException {
        Path bin = dir.resolve("bin");
        Files.createDirectories(bin);
        for (String tool : List.of("sed", "tr", "head", "awk", "readlink", "dirname", "cat", "uname", "grep", "mktemp")) {
            stub(bin, tool, "exec " + which(tool) + " \"$@\""); // not a link: JUnit warns of links out of its temp dir
        }
        stub(bin, "bash", "exec " + which("bash") + " \"$@\"");
        stub(bin, "dpkg", "echo " + dpkgArch);
        Files.deleteIfExists(bin.resolve("apt-cache"));
        if (aptCacheDepends != null) {
            Files.writeString(dir.resolve("depends"), aptCacheDepends);
            stub(bin, "apt-cache", "cat '" + dir.resolve("depends") + "'");
        }
        for (String tool : List.of("mvn", "java")) {
            stub(bin, tool, "echo \"$0 $*\" >> '" + dir.resolve("called") + "'; exit 97");
        }
        Path release = dir.resolve("os-release");
        Files.writeString(release, osRelease);

        ProcessBuilder pb = new ProcessBuilder(cmd).directory(root().toFile());
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.equals("CI") || k.startsWith("SOFTROCE_") || k.equals("RDMA_SHUFFLE_CACHE"));
        env.put("PATH", bin.toString());
        env.put("SOFTROCE_OS_RELEASE", release.toString());
        env.put("RDMA_SHUFFLE_CACHE", dir.resolve("cache").toString());
        if (ci) {
            env.put("CI", "true");
        }
        Process p = pb.start();
        p.getOutputStream().close();
        CompletableFuture<byte[]> out = CompletableFuture.supplyAsync(() -> readAll(p.getInputStream()));
        CompletableFuture<byte[]> err = CompletableFuture.supplyAsync(() -> readAll(p.getErrorStream()));
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), String.join(" ", cmd) + " did not exit in 60 s");
        return new Run(p.exitValue(), new String(out.join(), StandardCharsets.UTF_8), new String(err.join(), StandardCharsets.UTF_8));
    }

    private static void stub(Path bin, String name, String body) throws IOException {
        Path stub = bin.resolve(name);
        Files.writeString(stub, "#!" + which("bash") + "\n" + body + "\n");
        Files.setPosixFilePermissions(stub, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    private static Path which(String tool) {
        for (String d : List.of("/usr/bin", "/bin", "/usr/local/bin")) {
            Path p = Path.of(d, tool);
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        throw new IllegalStateException(tool + " is in none of /usr/bin, /bin, /usr/local/bin");
    }

    private static byte[] readAll(java.io.InputStream in) {
        try (in) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The checkout: Surefire runs in the module's directory. */
    private static Path root() {
        Path module = Path.of(System.getProperty("basedir", System.getProperty("user.dir"))).toAbsolutePath();
        return module.getParent();
    }
}
