"""The build-linux recipe (`hbl workloads capture build-linux`)."""
import os

from hbl.trace.recipes.base import Recipe, Step


class LinuxBuild(Recipe):
    name, application, package = "build-linux", "GCC + make (Linux source)", "linux-source"
    runs = "unpack Debian's linux-source tarball, make defconfig, make -j2 (x86_64)"
    expected = "30 minutes (the build is CPU-bound on 2 cores: tens of thousands of requests, mostly writes)"
    cache_bound = "memory cgroup of 512 MiB around tar and make (the compilers' own memory included; " \
                  "the tree and objects are about 3 GiB)"
    memory_mib = 512
    fs_gib = 12
    binaries = (("/usr/src/linux-source-*.tar.xz", "linux-source"), ("/usr/bin/make", "make"),
                ("/usr/bin/flex", "flex"), ("/usr/bin/bison", "bison"), ("/usr/bin/bc", "bc"),
                ("/usr/include/libelf.h", "libelf-dev"), ("/usr/include/openssl/ssl.h", "libssl-dev"),
                ("/usr/bin/xz", "xz-utils"))

    def steps(self, sc):
        tarball = self.tool("/usr/src/linux-source-*.tar.xz")
        tree = sc.path(os.path.basename(tarball)[:-len(".tar.xz")])
        return [Step("unpack", ["tar", "-xf", tarball, "-C", sc.mnt]),
                Step("defconfig", ["make", "-C", tree, "defconfig"]),
                Step("make", ["make", "-C", tree, "-j2"], 1.0)]
