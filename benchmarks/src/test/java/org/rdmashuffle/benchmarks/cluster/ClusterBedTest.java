package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/cluster-bed}: hosts that reach only each other, nothing added to the machine's own
 * namespace, nothing left behind, even by a run that was killed.
 */
class ClusterBedTest {
    @BeforeEach
    void bed() {
        BedSupport.requireBed();
    }

    @Test
    void theMachinesOwnNamespaceGainsNoAddressRouteOrLink_andHostsRouteOnlyTheirSubnet() throws Exception {
        String before = ownNamespace();
        try (ClusterBed bed = ClusterBed.start(3, "25gbit")) {
            assertEquals(before, ownNamespace(), "the bed changed the machine's own namespace");
            assertEquals(3, bed.hosts().size());
            for (ClusterBed.Host h : bed.hosts()) {
                String routes = BedSupport.output("ip", "-n", h.namespace(), "-4", "route");
                assertEquals(List.of("10.213.7.0/24 dev eth0 proto kernel scope link src " + h.address()),
                        routes.lines().map(String::strip).toList(), "a host routes only the bed's subnet: " + routes);
                String link = BedSupport.output("ip", "-n", h.namespace(), "link", "show", "eth0");
                assertTrue(link.contains("mtu 9000") && link.contains("state UP"), link);
                assertTrue(BedSupport.output("ip", "netns", "exec", h.namespace(), "tc", "qdisc", "show", "dev", "eth0")
                        .contains("tbf"), "the link is shaped");
                assertTrue(BedSupport.output("ip", "-n", h.namespace(), "addr", "show", "lo").contains("UP"), "lo is up");
            }
        }
        assertEquals(before, ownNamespace());
    }

    @Test
    void leftoversOfAKilledRun_areRemovedByTheNextRun() throws Exception {
        ClusterBed killed = ClusterBed.start(2, null);
        String prefix = killed.namespacePrefix();
        Path disks = killed.hosts().get(0).disk().getParent();
        killed.script().destroyForcibly(); // SIGKILL: no trap runs
        killed.script().waitFor(10, TimeUnit.SECONDS);
        assertEquals(3, namespaces(prefix).size(), "a killed run leaves its hosts and bridge behind");
        assertTrue(Files.isDirectory(disks), "and its disks");
        try (ClusterBed next = ClusterBed.start(1, null)) {
            assertEquals(List.of(), namespaces(prefix), "the next run removed the killed run's namespaces");
            assertFalse(Files.exists(disks), "and its disks");
            assertFalse(BedSupport.output("mount").contains(disks.toString()), "unmounted");
            assertEquals(2, namespaces(next.namespacePrefix()).size());
        }
    }

    @Test
    void eachHostHasADiskOfItsOwn_journaled_andGoneWithTheBed_evenWhileAProcessHoldsAFileOnIt() throws Exception {
        List<Path> disks;
        long holder;
        try (ClusterBed bed = ClusterBed.start(2, null)) {
            disks = bed.hosts().stream().map(ClusterBed.Host::disk).toList();
            for (Path d : disks) {
                assertTrue(d != null && Files.isDirectory(d), "a host without a disk: " + bed.hosts());
            }
            assertTrue(!Files.getFileStore(disks.get(0)).name().equals(Files.getFileStore(disks.get(1)).name())
                    && !Files.getFileStore(disks.get(0)).name().equals(Files.getFileStore(Path.of(".").toAbsolutePath()).name()),
                    "each host's disk is a file system of its own, not this machine's: " + disks);
            String source = BedSupport.output("findmnt", "-n", "-o", "SOURCE", disks.get(0).toString()).strip();
            String device = source.substring(source.lastIndexOf('/') + 1);
            assertTrue(Files.readString(Path.of("/sys/fs/ext4", device, "journal_task")).strip().matches("\\d+"),
                    "the disk has a journal, as mkfs.ext4 makes one by default (" + source + ")");
            // A file written in a host is on that host's disk; a process keeping it open does not keep the disk.
            Process p = new ProcessBuilder(bed.hosts().get(0).command(List.of("sh", "-c",
                    "exec 3>" + disks.get(0).resolve("held") + "; echo x >&3; sleep 600"))).start();
            holder = p.pid();
            for (int i = 0; i < 50 && !Files.exists(disks.get(0).resolve("held")); i++) {
                Thread.sleep(100);
            }
            assertTrue(Files.exists(disks.get(0).resolve("held")), "the host's process wrote to its disk");
        }
        assertFalse(ProcessHandle.of(holder).map(ProcessHandle::isAlive).orElse(false), "a process in a host outlived the bed");
        for (Path d : disks) {
            assertFalse(Files.exists(d.getParent()), "the bed's disks and images outlived it: " + d.getParent());
        }
        assertFalse(BedSupport.output("mount").contains(disks.get(0).getParent().toString()), "a disk is still mounted");
    }

    @Test
    void aClosedBedLeavesNoNamespaceAndNoProcess() throws Exception {
        String prefix;
        long sleeper;
        try (ClusterBed bed = ClusterBed.start(2, null)) {
            prefix = bed.namespacePrefix();
            Process p = new ProcessBuilder(bed.hosts().get(0).command(List.of("sleep", "600"))).start();
            sleeper = p.pid();
        }
        assertEquals(List.of(), namespaces(prefix));
        assertFalse(ProcessHandle.of(sleeper).map(ProcessHandle::isAlive).orElse(false), "a process in a host outlived the bed");
    }

    @Test
    void withoutRoot_theBedRefusesWithTheReason(@TempDir Path dir) throws Exception {
        // A copy nobody can read and run, wherever this checkout lives.
        Path script = Files.copy(ClusterBed.scriptPath(), dir.resolve("cluster-bed"));
        // The argument helpers it sources, beside it as in bin/.
        Path args = Files.copy(ClusterBed.scriptPath().resolveSibling("args.sh"), dir.resolve("args.sh"));
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.setPosixFilePermissions(args, PosixFilePermissions.fromString("rw-r--r--"));
        BedSupport.Output o = BedSupport.run(List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                script.toString(), "--hosts", "1", "--", "true"));
        assertEquals(ClusterBed.CANNOT, o.status(), o.text());
        assertTrue(o.text().contains("need root"), o.text());
    }

    @Test
    void aDelayWithoutNetem_orABadHostCount_isRefusedByName() throws Exception {
        BedSupport.Output hosts = BedSupport.run(List.of(ClusterBed.scriptPath().toString(), "--hosts", "0", "--", "true"));
        assertEquals(2, hosts.status(), hosts.text());
        assertTrue(hosts.text().contains("--hosts must be 1..200"), hosts.text());
        BedSupport.Output delay = BedSupport.run(List.of(ClusterBed.scriptPath().toString(), "--hosts", "1", "--delay", "10us",
                "--", "true"));
        // Either the kernel has netem (and the run succeeds) or the refusal names what is missing.
        assertTrue(delay.status() == 0 || delay.text().contains("CONFIG_NET_SCH_NETEM"), delay.text());
    }

    /** Addresses, routes and links of the namespace this JVM runs in (address lifetimes, which count down, left out). */
    private static String ownNamespace() throws Exception {
        return (BedSupport.output("ip", "-o", "addr") + BedSupport.output("ip", "route") + BedSupport.output("ip", "-o", "link"))
                .replaceAll("(valid|preferred)_lft \\S+", "").replaceAll("link-netnsid \\d+", "");
    }

    private static List<String> namespaces(String prefix) throws Exception {
        return BedSupport.output("ip", "netns", "list").lines().map(l -> l.split(" ")[0]).filter(n -> n.startsWith(prefix))
                .toList();
    }
}
