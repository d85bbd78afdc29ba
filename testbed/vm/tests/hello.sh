uname -a; cat /proc/sys/net/ipv4/tcp_available_congestion_control; ls /work/main/kmods/*.ko; ip -V; exit 3
