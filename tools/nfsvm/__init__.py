"""A Debian Linux 6.1 VM under qemu (TCG) that runs the NFS job on a real kernel NFSv4.2 server and client."""
