from sieve.cli.main import main

raise SystemExit(main())
