#!/bin/sh
# Latency of the emulated devices as fio sees them in the guest: 4 KiB random
# reads at queue depth 1 and 32 (read-only: data on the devices is kept).
for dev in /dev/nvme0n1 /dev/vda; do
    for qd in 1 32; do
        fio --name=lat --filename=$dev --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=$qd \
            --runtime=10 --time_based --size=256M --output-format=json > /out/fio-$(basename $dev)-qd$qd.json
        python3 - "$dev" "$qd" /out/fio-$(basename $dev)-qd$qd.json <<'PY'
import json, sys
j = json.load(open(sys.argv[3]))["jobs"][0]["read"]
print("%-13s qd%-3s %8.0f IOPS  mean %8.1f us  p99 %8.1f us" % (sys.argv[1], sys.argv[2], j["iops"],
      j["clat_ns"]["mean"] / 1e3, j["clat_ns"]["percentile"]["99.000000"] / 1e3))
PY
    done
done
