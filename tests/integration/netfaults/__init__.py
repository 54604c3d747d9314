"""Network faults between clients and a cluster, on loopback only.

``toxiproxy`` builds Shopify's Toxiproxy from the Go module proxy into the suite's cache and drives a running
one over its HTTP API; ``netns`` runs a program in a network namespace of its own and cuts or heals a port
there with iptables; ``scenario`` is the program the test runs in that namespace (servers, proxy, clients,
faults) and ``test_network_faults.py`` the test that starts it and judges its result.
"""
