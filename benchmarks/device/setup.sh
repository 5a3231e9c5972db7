#!/bin/bash
# On the GPU machine (no package registry there): install the carried wheels into its python3 and
# put Debian's bubblewrap, unpacked from the carried .deb, first on PATH. Source it:
#   . benchmarks/device/setup.sh WHEELS_DIR DEBS_DIR
# Host-side preparation: benchmarks/device/README.md.
WHEELS=${1:-.whl}; DEBS=${2:-.deb}
python3 -m pip install -q --no-index --no-deps --no-compile "$WHEELS"/*.whl \
  || { python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$WHEELS"/*.whl
       export PYTHONPATH=/tmp/site; }
rm -rf /tmp/bw /tmp/bwbin /tmp/bwlib /tmp/bwdeps; mkdir -p /tmp/bw /tmp/bwbin; chmod 755 /tmp/bw /tmp/bwbin
dpkg -x "$DEBS"/bubblewrap_*.deb /tmp/bw
missing=$(ldd /tmp/bw/usr/bin/bwrap | awk '/not found/{print $1}')
if [ -z "$missing" ]; then
  ln -s /tmp/bw/usr/bin/bwrap /tmp/bwbin/bwrap
else  # libraries the host lacks, from the carried .debs (libcap2, libselinux1, libpcre2-8-0)
  mkdir -p /tmp/bwdeps /tmp/bwlib; chmod 755 /tmp/bwlib
  for deb in "$DEBS"/lib*.deb; do dpkg -x "$deb" /tmp/bwdeps; done
  for round in 1 2; do
    for lib in $(LD_LIBRARY_PATH=/tmp/bwlib ldd /tmp/bw/usr/bin/bwrap | awk '/not found/{print $1}'); do
      cp -L "$(find /tmp/bwdeps -name "$lib*" | head -1)" /tmp/bwlib/"$lib"
    done
  done
  chmod 755 /tmp/bwlib/*
  printf '#!/bin/sh\nexec /lib64/ld-linux-x86-64.so.2 --library-path /tmp/bwlib /tmp/bw/usr/bin/bwrap "$@"\n' > /tmp/bwbin/bwrap
  chmod 755 /tmp/bwbin/bwrap
fi
export PATH=/tmp/bwbin:$PATH
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
bwrap --version
