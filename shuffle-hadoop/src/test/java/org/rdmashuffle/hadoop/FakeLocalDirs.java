package org.rdmashuffle.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;

/**
 * The NodeManager's local dirs over {@code roots}, as the auxiliary-service API hands them to a
 * service: like Hadoop's own handler, it tests existence following links (a tenant's link answers
 * whether its target exists: what the service must not pass on).
 */
final class FakeLocalDirs implements AuxiliaryLocalPathHandler {
    private final Path[] roots;

    FakeLocalDirs(Path... roots) {
        this.roots = roots.clone();
    }

    @Override
    public org.apache.hadoop.fs.Path getLocalPathForRead(String path) throws IOException {
        for (org.apache.hadoop.fs.Path p : getAllLocalPathsForRead(path)) {
            return p;
        }
        throw new org.apache.hadoop.util.DiskChecker.DiskErrorException("Could not find " + path);
    }

    @Override
    public org.apache.hadoop.fs.Path getLocalPathForWrite(String path) {
        return new org.apache.hadoop.fs.Path(roots[0].resolve(path).toString());
    }

    @Override
    public org.apache.hadoop.fs.Path getLocalPathForWrite(String path, long size) {
        return getLocalPathForWrite(path);
    }

    @Override
    public Iterable<org.apache.hadoop.fs.Path> getAllLocalPathsForRead(String path) {
        List<org.apache.hadoop.fs.Path> found = new ArrayList<>();
        for (Path root : roots) {
            if (Files.exists(root.resolve(path))) {
                found.add(new org.apache.hadoop.fs.Path(root.resolve(path).toString()));
            }
        }
        return found;
    }
}
