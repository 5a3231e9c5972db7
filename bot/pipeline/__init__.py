"""The stages of a triage and their order: reproduce, minimize, regress, place the test, comment."""
