"""The GitHub App: intake, features, dispatch, the store, the one GitHub client."""
