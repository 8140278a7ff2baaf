package org.rdmashuffle.hadoop;

import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.LocalDirAllocator;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;

/**
 * The NodeManager's local dirs ({@code yarn.nodemanager.local-dirs}) for a service the NodeManager
 * gave no local path handler: Hadoop 3.5 loads a service named with
 * {@code yarn.nodemanager.aux-services.<name>.classpath} inside a wrapper
 * ({@code AuxiliaryServiceWithCustomClassLoader}) that does not pass the handler on, so both halves of
 * the MapReduce service (the stock handler's HTTP and the RDMA engine) would find no map output.
 * Unlike the NodeManager's own handler this one does not skip dirs its disk checker has marked bad:
 * a read from such a dir fails as the read of a missing output would.
 */
final class NodeLocalDirs implements AuxiliaryLocalPathHandler {
    private final LocalDirAllocator dirs = new LocalDirAllocator(YarnConfiguration.NM_LOCAL_DIRS);
    private final Configuration conf;

    NodeLocalDirs(Configuration conf) {
        this.conf = conf;
    }

    /** {@code given} if the NodeManager handed the service one, else the node's configured local dirs. */
    static AuxiliaryLocalPathHandler orConfigured(AuxiliaryLocalPathHandler given, NodeLocalDirs configured) {
        return given != null ? given : configured;
    }

    @Override
    public Path getLocalPathForRead(String path) throws IOException {
        return dirs.getLocalPathToRead(path, conf);
    }

    @Override
    public Path getLocalPathForWrite(String path) throws IOException {
        return dirs.getLocalPathForWrite(path, conf);
    }

    @Override
    public Path getLocalPathForWrite(String path, long size) throws IOException {
        return dirs.getLocalPathForWrite(path, size, conf);
    }

    @Override
    public Iterable<Path> getAllLocalPathsForRead(String path) throws IOException {
        return dirs.getAllLocalPathsToRead(path, conf);
    }
}
