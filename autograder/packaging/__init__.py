"""packaging: what leaves the instructor — the Gradescope zip, the student's copy, the locks, the
audiences (Pythons, platforms, requirement sets) and the upload packer."""
