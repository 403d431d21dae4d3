# lit configuration for the diagnostic tests: one fail_<kind>.fnk per kind of
# error the front end reports, each checking the located message (and mostly
# the source line and caret) that fnkc prints. Shares tests/lit/lit.cfg.py's
# substitutions; only the suite's roots differ.
import os

lit_config.load_config(config, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lit", "lit.cfg.py"))
config.name = "fnk-diag"
config.suffixes = [".fnk"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(config.fnk_bin_root, "tests", "diag-out")
