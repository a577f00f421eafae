"""hbl: a hybrid block layer with learned data placement and migration."""
__version__ = "0.1.0"
